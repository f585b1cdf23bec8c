package chaos

import "testing"

// Check 15's self-test: hand-built deliveries of one operation, a history
// that keeps one completion per operation and replays only to its own
// payload, and broken ones, as a layer with that flaw would write them.

var iKey = idemKey("k0.p0.e0")

// idemRun records run name of the record for payload at ms; failed: it
// returned an error.
func (h *stormHistory) idemRun(w int, name, payload string, ms int64, failed bool) {
	e := Event{T: at(ms), Worker: w, Kind: EvIdemRun, Key: iKey, Run: name, Payload: payload}
	if failed {
		e.Outcome = "failed"
	}
	h.rec.events = append(h.rec.events, e)
}

// idemCall records worker w's delivery with payload, answered at ms with
// run's answer for ansPayload (outcome ran or replay), or with err.
func (h *stormHistory) idemCall(w int, payload string, ms int64, outcome, run, ansPayload, err string) {
	h.rec.events = append(h.rec.events, Event{T: at(ms - 10), T2: at(ms), Worker: w, Kind: EvIdemCall, Key: iKey, Payload: payload,
		Outcome: outcome, Run: run, AnsPayload: ansPayload, Err: err})
}

func TestCheckIdempotency(t *testing.T) {
	const mismatch = "idempotency: key reused with another payload: key \"k0.p0.e0\""
	tests := []struct {
		name           string
		setup          func(h *stormHistory)
		want           int
		wantMismatched int
	}{
		{"one run, duplicates replayed, a mismatch refused", func(h *stormHistory) {
			h.idemRun(0, "w0.0.1", "order", 0, true) // failed: not kept, the next delivery runs
			h.idemCall(0, "order", 100, "error", "", "", "chaos: the operation failed")
			h.idemRun(1, "w1.0.1", "order", 200, false)
			h.idemCall(1, "order", 300, "ran", "w1.0.1", "order", "")
			h.idemCall(2, "order", 310, "replay", "w1.0.1", "order", "")
			h.idemCall(3, "other", 320, "error", "", "", mismatch)
		}, 0, 1},
		{"two completions", func(h *stormHistory) {
			h.idemRun(1, "w1.0.1", "order", 200, false)
			h.idemRun(2, "w2.0.1", "order", 250, false)
			h.idemCall(1, "order", 300, "ran", "w1.0.1", "order", "")
			h.idemCall(2, "order", 310, "ran", "w2.0.1", "order", "")
		}, 1, 0},
		{"a replay to a mismatched payload", func(h *stormHistory) {
			h.idemRun(1, "w1.0.1", "order", 200, false)
			h.idemCall(1, "order", 300, "ran", "w1.0.1", "order", "")
			h.idemCall(3, "other", 320, "replay", "w1.0.1", "order", "")
		}, 1, 0},
		{"an answer of a failed run", func(h *stormHistory) {
			h.idemRun(1, "w1.0.1", "order", 200, true)
			h.idemCall(2, "order", 310, "replay", "w1.0.1", "order", "")
		}, 1, 0},
		{"an answer no run produced", func(h *stormHistory) {
			h.idemCall(2, "order", 310, "replay", "w9.0.1", "order", "")
		}, 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newStormHistory()
			tt.setup(h)
			rep := h.check(t, (*analysis).checkIdempotency)
			if got := rep.Violations[CheckIdempotency]; got != tt.want {
				t.Errorf("violations = %d, want %d (%v)", got, tt.want, rep.Details[CheckIdempotency])
			}
			if rep.Idem.Mismatched != tt.wantMismatched {
				t.Errorf("mismatched deliveries = %d, want %d", rep.Idem.Mismatched, tt.wantMismatched)
			}
		})
	}
}
