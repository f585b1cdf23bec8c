package lockcore

import (
	"testing"
	"time"
)

// The call timeout follows RFC 6298 between its bounds: the attempt
// timeout before any answer, SRTT + 4·RTTVAR after answers, twice the
// timeout after a call that got none (until the next answer), never below
// the attempt timeout nor above the renewal interval.
func TestCallTimeoutFollowsLatency(t *testing.T) {
	const floor, ceiling = 500 * time.Millisecond, 2 * time.Second
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	type event struct {
		rtt     time.Duration // an answer after rtt; 0: a timeout
		waited  time.Duration // for a timeout: how long it waited
		allowed time.Duration // and what it was allowed
	}
	tests := []struct {
		name   string
		events []event
		want   time.Duration
	}{
		{"no answer yet: the attempt timeout", nil, floor},
		{"fast answers: the attempt timeout", []event{{rtt: ms(10)}, {rtt: ms(12)}, {rtt: ms(8)}}, floor},
		{"one answer of 300ms: 300 + 4·150", []event{{rtt: ms(300)}}, ms(900)},
		{"steady 700ms answers: capped at the renewal interval", []event{{rtt: ms(700)}}, ceiling},
		{"400ms then 200ms: SRTT 375, RTTVAR 200", []event{{rtt: ms(400)}, {rtt: ms(200)}}, ms(1175)},
		{"a first call timed out: a round trip of at least 500ms, 500 + 4·250", []event{{waited: floor, allowed: floor}}, ms(1500)},
		{"fast store, one lost answer: doubled once", []event{{rtt: ms(10)}, {rtt: ms(10)}, {waited: floor, allowed: floor}}, 2 * floor},
		// The timeout counts as a round trip of 500ms: SRTT 10 → 71.25 →
		// 63.59375, RTTVAR 5 → 126.25 → 110.
		{"an answer after a timeout ends the backoff", []event{{rtt: ms(10)}, {waited: floor, allowed: floor}, {rtt: ms(10)}}, 503593750 * time.Nanosecond},
		{"two timeouts in a row: capped", []event{{rtt: ms(10)}, {waited: floor, allowed: floor}, {waited: 2 * floor, allowed: 2 * floor}}, ceiling},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var e latency
			for _, ev := range tt.events {
				if ev.rtt > 0 {
					e.answered(ev.rtt)
				} else {
					e.timedOut(ev.waited, ev.allowed)
				}
			}
			if got := e.timeout(floor, ceiling); got != tt.want {
				t.Errorf("timeout() = %v, want %v", got, tt.want)
			}
		})
	}
}
