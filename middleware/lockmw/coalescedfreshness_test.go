package lockmw_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/middleware/lockmw"
)

// TestCoalescedFollowerArrivingAfterAnOldSuccess: another holder publishes
// success at 1 s while the leader waits on the store, reading it only
// every 10 s; an invocation that arrives at 3 s, when that success is older
// than the 1 s fresh-success window, finds the lock free on the store and
// acquires it, as the window says. A follower that arrives then must not
// be RELEASED with that success when the leader reads it later: it is
// told what a waiter on the store arriving then is told.
func TestCoalescedFollowerArrivingAfterAnOldSuccess(t *testing.T) {
	tests := []struct {
		name     string
		coalesce bool
	}{
		{"waiting on the store", false},
		{"coalesced", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				mem := lockcore.NewMemoryStore()
				other := holdElsewhere(t, context.Background(), mem, "EUR-USD")
				otherFence := other.Fence()
				time.AfterFunc(time.Second, func() {
					if err := other.Release(context.Background(), lockcore.Success, "ref-old"); err != nil {
						t.Errorf("other holder's release: %v", err)
					}
				})
				hd := &coalescedHerd{n: 2, work: time.Second, store: &opCounter{Store: mem},
					arrive: func(i int) time.Duration { return []time.Duration{0, 3 * time.Second}[i] },
					opts: []lockmw.Option{lockmw.WithCoalescing(tt.coalesce), lockmw.WithLockOptions(
						lockcore.WithFreshSuccess(time.Second), lockcore.WithPollInterval(10*time.Second))}}
				hd.run(t)
				if got := hd.infos[0]; hd.errs[0] != nil || got.Outcome != lockcore.Released || got.Fence < otherFence {
					t.Errorf("invocation 0: %+v, %v; want RELEASED with a success at fence %d or later", got, hd.errs[0], otherFence)
				}
				if got := hd.infos[1]; hd.errs[1] != nil || got.Outcome != lockcore.Acquired || got.Coalesced {
					t.Errorf("invocation 1, arriving 2 s after the success: %+v, %v; want ACQUIRED, as the fresh-success window says", got, hd.errs[1])
				}
			})
		})
	}
}
