package lockcore_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/lockcore/storeapi"
)

// firstWritesThrottled is a MemoryStore whose first n acquires are
// throttled, as a herd's first writes are on a hot item.
type firstWritesThrottled struct {
	*lockcore.MemoryStore
	n        int64
	acquires atomic.Int64
}

func (s *firstWritesThrottled) Acquire(ctx context.Context, req storeapi.AcquireRequest) (storeapi.Item, error) {
	if s.acquires.Add(1) <= s.n {
		return storeapi.Item{}, fmt.Errorf("test: lock item over its write capacity: %w", lockcore.ErrThrottled)
	}
	return s.MemoryStore.Acquire(ctx, req)
}

// A success published long before the wait, and no longer fresh, is old
// news: a wait that never saw the item held (its first write was
// throttled, or its first read found that success and its write was then
// throttled) acquires the free lock instead of returning the old answer;
// and that acquisition is not a take-over of an abandoned lease. With and
// without a fresh-success window, writing first and reading first.
func TestOldSuccessIsNotTheWaitsAnswer(t *testing.T) {
	cases := []struct {
		name string
		opts []lockcore.Option
	}{
		{"write first", nil},
		{"write first, fresh window", []lockcore.Option{lockcore.WithFreshSuccess(5 * time.Second)}},
		{"read first", []lockcore.Option{lockcore.WithHerd(lockcore.Herd{ReadFirst: true})}},
		{"read first, fresh window", []lockcore.Option{lockcore.WithHerd(lockcore.Herd{ReadFirst: true}), lockcore.WithFreshSuccess(5 * time.Second)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := &firstWritesThrottled{MemoryStore: lockcore.NewMemoryStore()}
				old := newLock(t, s, "earlier")
				mustAcquire(t, old)
				mustRelease(t, old, lockcore.Success, "old-ref")
				time.Sleep(time.Minute) // an earlier episode: neither fresh nor this burst's

				s.n = s.acquires.Load() + 1 // the waiter's first write is throttled
				var m recMetrics
				l := newLock(t, s, "waiter", append(c.opts, lockcore.WithMetrics(&m), lockcore.WithHerd(lockcore.Herd{NoHotKeys: true}))...)
				res, err := l.TryAcquireElseWaitForRelease(context.Background())
				if err != nil || res.Outcome != lockcore.Acquired {
					t.Fatalf("TryAcquireElseWaitForRelease() = %+v, %v; want Acquired, not the old success", res, err)
				}
				if res.TookOver || m.sum(lockcore.MetricTakeover) != 0 {
					t.Errorf("TookOver %v, %s %v; want no take-over: the holder before published a success",
						res.TookOver, lockcore.MetricTakeover, m.sum(lockcore.MetricTakeover))
				}
				mustRelease(t, l, lockcore.Success, "new-ref")
			})
		})
	}
}

// A success published during the wait is its answer even when the wait
// never read the lock item while it was held (its first write throttled,
// every later read too until the release): released after the wait began,
// or up to the clock allowance before.
func TestSuccessOfTheBurstIsTheWaitsAnswer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &firstWritesThrottled{MemoryStore: lockcore.NewMemoryStore()}
		holder := newLock(t, s, "holder")
		mustAcquire(t, holder)
		s.n = s.acquires.Load() + 1
		done := make(chan lockcore.WaitResult, 1)
		go func() {
			l := newLock(t, s, "waiter", lockcore.WithHerd(lockcore.Herd{NoHotKeys: true}))
			res, err := l.TryAcquireElseWaitForRelease(context.Background())
			if err != nil {
				t.Errorf("TryAcquireElseWaitForRelease() error = %v", err)
			}
			done <- res
		}()
		synctest.Wait() // the waiter's write was throttled; it sleeps before its first read
		mustRelease(t, holder, lockcore.Success, "ref")
		res := <-done
		if res.Outcome != lockcore.Released || res.ResultRef != "ref" {
			t.Errorf("waiter = %+v, want Released with the holder's ref", res)
		}
	})
}
