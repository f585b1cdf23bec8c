package lockmw_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/middleware/lockmw"
)

// TestCoalescedLeaderSharesItsFailure: the leader's Fetch fails after 1 s
// with a Retry-After of 20 s. A follower with a 10 s function, whose limit
// is before the not-before, is told at once that the holder failed, with
// that not-before, as a waiter on the store is; one with a minute left
// tries again after the not-before, acquires, and fetches.
func TestCoalescedLeaderSharesItsFailure(t *testing.T) {
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
				var mu sync.Mutex // guards calls and failedAt
				calls := 0
				var failedAt time.Time
				hd := &coalescedHerd{n: 3, opts: []lockmw.Option{coalescing(tt.coalesce)},
					timeout: func(i int) time.Duration { return []time.Duration{time.Minute, 10 * time.Second, time.Minute}[i] },
					fetch: func(ctx context.Context, e event) (string, error) {
						mu.Lock()
						calls++
						first := calls == 1
						mu.Unlock()
						time.Sleep(time.Second)
						if first {
							mu.Lock()
							failedAt = time.Now()
							mu.Unlock()
							return "", &hintedError{after: 20 * time.Second, code: "upstream_busy"}
						}
						return "v", nil
					}}
				hd.run(t)
				mu.Lock()
				defer mu.Unlock()
				notBefore := failedAt.Add(20 * time.Second)
				var hf *lockcore.HolderFailedError
				if err := hd.errs[1]; !errors.As(err, &hf) || !hf.NotBefore.Equal(notBefore) || hf.Reason != "upstream_busy" {
					t.Errorf("short follower: %v, want the holder's failure upstream_busy with the not-before %v", err, notBefore)
				}
				if d := hd.ends[1].Sub(failedAt); d < 0 || d > 2*lockcore.DefaultPollInterval {
					t.Errorf("short follower returned %v after the failure, want within two poll intervals", d)
				}
				if got := hd.infos[2]; hd.errs[2] != nil || got.Outcome != lockcore.Acquired || !got.AfterFailure {
					t.Errorf("long follower: %+v, %v; want ACQUIRED after the failure", got, hd.errs[2])
				}
				if hd.ends[2].Before(notBefore) {
					t.Errorf("long follower returned %v before the not-before", notBefore.Sub(hd.ends[2]))
				}
			})
		})
	}
}
