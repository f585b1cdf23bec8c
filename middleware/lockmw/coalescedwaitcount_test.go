package lockmw_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/middleware/lockmw"
)

// TestCoalescedFallThroughWaitIsCounted: the leader's Fetch fails after
// 20 s; one invocation then acquires and works 20 s, the other is RELEASED
// with its success. Each waited from when it came, whether on the store or
// first for a leader in the process, and says so as a waiter on the store
// does: Info.Waited, WaitForLock 1 and LockAcquisitionWaitDuration,
// counted from its arrival, not from the end of its wait for the leader,
// and LockAcquisitionSuccess 0 (it did not acquire at its first attempt).
func TestCoalescedFallThroughWaitIsCounted(t *testing.T) {
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
				var mu sync.Mutex // guards calls and acquiredAt
				calls := 0
				var acquiredAt time.Time // the second Fetch's start
				start := time.Now()
				hd := &coalescedHerd{n: 3, timeout: func(int) time.Duration { return 2 * time.Minute },
					opts: []lockmw.Option{coalescing(tt.coalesce), lockmw.WithLockOptions(lockcore.WithMaxWait(time.Minute))},
					fetch: func(ctx context.Context, e event) (string, error) {
						mu.Lock()
						calls++
						first := calls == 1
						if !first {
							acquiredAt = time.Now()
						}
						mu.Unlock()
						if first {
							time.Sleep(20 * time.Second)
							return "", errors.New("upstream 503")
						}
						time.Sleep(20 * time.Second)
						info, _ := lockmw.FromContext(ctx)
						return "v@" + strconv.FormatInt(info.Fence, 10), nil
					}}
				hd.run(t)
				mu.Lock()
				defer mu.Unlock()
				for i := 1; i < hd.n; i++ {
					if hd.errs[i] != nil {
						t.Fatalf("invocation %d: %v after %v; leader %v after %v", i, hd.errs[i], hd.ends[i].Sub(start), hd.errs[0], hd.ends[0].Sub(start))
					}
					// It waited from its arrival (the start) until it decided:
					// at least until the leader's failure (20 s) when it
					// acquired, until the other's success (40 s) when RELEASED.
					least, most := 20*time.Second, acquiredAt.Sub(start)
					if hd.infos[i].Outcome == lockcore.Released {
						least, most = 40*time.Second, hd.ends[i].Sub(start)
					}
					if w := hd.infos[i].Waited; w < least || w > most {
						t.Errorf("invocation %d (%v): Info.Waited = %v, want between %v and %v", i, hd.infos[i].Outcome, w, least, most)
					}
					d := hd.doc(t, i)
					if d["LockAcquisitionSuccess"] != 0.0 {
						t.Errorf("invocation %d (%v): %s = %v, want 0: it did not acquire at its first attempt", i, hd.infos[i].Outcome,
							"LockAcquisitionSuccess", d["LockAcquisitionSuccess"])
					}
					if d["WaitForLock"] != 1.0 {
						t.Errorf("invocation %d (%v): %s = %v, want 1", i, hd.infos[i].Outcome, "WaitForLock", d["WaitForLock"])
					}
					ms, _ := d["LockAcquisitionWaitDuration"].(float64)
					// Up to a microsecond over: the metric adds two waits in float milliseconds.
					if ms < float64(least.Milliseconds()) || ms > float64(most+time.Microsecond)/float64(time.Millisecond) {
						t.Errorf("invocation %d (%v): %s = %v, want between %v and %v ms", i, hd.infos[i].Outcome,
							"LockAcquisitionWaitDuration", d["LockAcquisitionWaitDuration"], least.Milliseconds(), most.Milliseconds())
					}
				}
			})
		})
	}
}
