package lockcore_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/herdlock/herdlock/lockcore"
)

// A table that answers every call slower than the attempt timeout (500 ms)
// is slow, not down: a herd of 200 arriving over a second is served, one
// holder and 199 RELEASED, because every call's timeout follows the
// latency the store shows. The client has no timeout of its own; the
// server applies a call halfway through its answer time.
func TestSlowStoreHerdIsServed(t *testing.T) {
	tests := []struct {
		name   string
		answer time.Duration
	}{
		{"every answer after 700ms", 700 * time.Millisecond},
		{"every answer after 1.5s", 1500 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const herd = 200
				store := &brownoutStore{mem: lockcore.NewMemoryStore(), slow: func(time.Time) time.Duration { return tt.answer }}
				start := time.Now()
				outcomes := make([]lockcore.Outcome, herd)
				errs := make([]error, herd)
				var fetches atomic.Int64
				var released time.Time // when the holder's Release returned
				var relErr error
				ends := make([]time.Time, herd)
				var wg sync.WaitGroup
				for i := range herd {
					wg.Go(func() {
						time.Sleep(time.Duration(i) * time.Second / herd)                        // the herd arrives over a second
						ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second) // the invocation's deadline
						defer cancel()
						l := newLock(t, store, fmt.Sprintf("invocation-%d", i))
						res, err := l.TryAcquireElseWaitForRelease(ctx)
						outcomes[i], errs[i], ends[i] = res.Outcome, err, time.Now()
						if res.Outcome != lockcore.Acquired {
							return
						}
						fetches.Add(1)
						time.Sleep(300 * time.Millisecond) // the upstream call
						if !l.Valid() {
							relErr = fmt.Errorf("holder not valid before release: %w", context.Cause(l.Context()))
						}
						if err := l.Release(ctx, lockcore.Success, "ref"); err != nil {
							relErr = err
						}
						released = time.Now()
					})
				}
				wg.Wait()
				count := map[lockcore.Outcome]int{}
				var last time.Time
				for i, o := range outcomes {
					count[o]++
					if errs[i] != nil {
						t.Errorf("invocation %d: %v, %v", i, o, errs[i])
					}
					if ends[i].After(last) {
						last = ends[i]
					}
				}
				if relErr != nil {
					t.Errorf("holder: %v", relErr)
				}
				if count[lockcore.Acquired] != 1 || count[lockcore.Released] != herd-1 || fetches.Load() != 1 {
					t.Errorf("ACQUIRED %d, RELEASED %d, FAILED %d, fetches %d; want 1, %d, 0, 1",
						count[lockcore.Acquired], count[lockcore.Released], count[lockcore.Failed], fetches.Load(), herd-1)
				}
				t.Logf("store calls %d; holder released %v after the start, last waiter returned %v after the release",
					store.calls.Load(), released.Sub(start), last.Sub(released))
			})
		})
	}
}

// A short lease makes a short renewal interval, which bounds only the
// renewals: with a lease of 1.5 s (renewal interval 500 ms) and an attempt
// timeout of 400 ms, a table that answers every call in 900 ms, within 4×
// the attempt timeout, still serves the herd, one holder and every waiter
// RELEASED, because a waiter's reads keep no lease and may wait up to 4×
// the attempt timeout for their answers.
func TestSlowStoreShortLeaseHerdIsServed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const herd = 20
		store := &brownoutStore{mem: lockcore.NewMemoryStore(), slow: func(time.Time) time.Duration { return 900 * time.Millisecond }}
		opts := []lockcore.Option{lockcore.WithLease(1500 * time.Millisecond), lockcore.WithStoreCalls(lockcore.StoreCalls{AttemptTimeout: 400 * time.Millisecond}),
			lockcore.WithMaxWait(5 * time.Second)}
		outcomes := make([]lockcore.Outcome, herd)
		errs := make([]error, herd)
		var fetches atomic.Int64
		var wg sync.WaitGroup
		for i := range herd {
			wg.Go(func() {
				time.Sleep(time.Duration(i) * 200 * time.Millisecond / herd) // the herd arrives over 200 ms
				ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
				defer cancel()
				l := newLock(t, store, fmt.Sprintf("invocation-%d", i), opts...)
				res, err := l.TryAcquireElseWaitForRelease(ctx)
				outcomes[i], errs[i] = res.Outcome, err
				if res.Outcome != lockcore.Acquired {
					return
				}
				fetches.Add(1)
				time.Sleep(50 * time.Millisecond) // the upstream call
				if err := l.Release(ctx, lockcore.Success, "ref"); err != nil {
					t.Errorf("holder: Release() = %v", err)
				}
			})
		}
		wg.Wait()
		count := map[lockcore.Outcome]int{}
		for i, o := range outcomes {
			count[o]++
			if errs[i] != nil {
				t.Errorf("invocation %d: %v, %v", i, o, errs[i])
			}
		}
		if count[lockcore.Acquired] != 1 || count[lockcore.Released] != herd-1 || fetches.Load() != 1 {
			t.Errorf("ACQUIRED %d, RELEASED %d, FAILED %d, fetches %d; want 1, %d, 0, 1",
				count[lockcore.Acquired], count[lockcore.Released], count[lockcore.Failed], fetches.Load(), herd-1)
		}
	})
}

// A 20 s hold on a table that answers every call in 700 ms (or 1.5 s)
// keeps its lease: each renewal allows the latency the store shows, so the
// holder hears the renewals the server applies, stays Valid throughout,
// and its release publishes.
func TestSlowStoreHoldKeepsLease(t *testing.T) {
	tests := []struct {
		name   string
		answer time.Duration
	}{
		{"every answer after 700ms", 700 * time.Millisecond},
		{"every answer after 1.5s", 1500 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				store := &brownoutStore{mem: lockcore.NewMemoryStore(), slow: func(time.Time) time.Duration { return tt.answer }}
				l := newLock(t, store, "holder")
				ctx := context.Background()
				res, err := l.TryAcquireElseWaitForRelease(ctx)
				if res.Outcome != lockcore.Acquired || err != nil {
					t.Fatalf("TryAcquireElseWaitForRelease() = %v, %v; want ACQUIRED", res.Outcome, err)
				}
				start := time.Now()
				for time.Since(start) < 20*time.Second {
					time.Sleep(100 * time.Millisecond) // the holder's work, checking before each step
					if !l.Valid() {
						t.Errorf("holder not valid %v into the hold: %v", time.Since(start), context.Cause(l.Context()))
						break
					}
				}
				if err := l.Release(ctx, lockcore.Success, "ref"); err != nil {
					t.Errorf("Release() = %v, want nil", err)
				}
				it, _, _ := store.mem.Get(ctx, l.Key())
				if !it.Released || it.Result != lockcore.Success || it.Beat < 5 {
					t.Errorf("item released %v, result %q, beat %d; want released with success after at least 5 renewals", it.Released, it.Result, it.Beat)
				}
			})
		})
	}
}

// A herd with read-first whose first reads get no answer in time (the
// table answers in 700 ms, the attempt timeout is 500 ms) waits, as a
// throttled one does: while the lock is held, not one of them writes, and
// all of them are RELEASED when the holder publishes.
func TestSlowFirstReadWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const herd = 50
		start := time.Now()
		slow := func(now time.Time) time.Duration {
			if now.Sub(start) >= time.Second {
				return 700 * time.Millisecond
			}
			return 0
		}
		store := &brownoutStore{mem: lockcore.NewMemoryStore(), slow: slow, fast: 5 * time.Millisecond}
		ctx := context.Background()
		holder := newLock(t, store, "holder")
		mustAcquire(t, holder)
		time.Sleep(time.Until(start.Add(time.Second))) // the brownout begins
		before := store.acquires.Load()
		outcomes := make([]lockcore.Outcome, herd)
		errs := make([]error, herd)
		var wg sync.WaitGroup
		for i := range herd {
			wg.Go(func() {
				ictx, cancel := context.WithTimeout(ctx, 15*time.Second)
				defer cancel()
				l := newLock(t, store, fmt.Sprintf("invocation-%d", i), lockcore.WithHerd(lockcore.Herd{ReadFirst: true}))
				res, err := l.TryAcquireElseWaitForRelease(ictx)
				outcomes[i], errs[i] = res.Outcome, err
			})
		}
		time.Sleep(3 * time.Second) // the holder's work
		herdWrites := store.acquires.Load() - before
		if err := holder.Release(ctx, lockcore.Success, "ref"); err != nil {
			t.Fatalf("Release() = %v", err)
		}
		wg.Wait()
		if herdWrites != 0 {
			t.Errorf("the herd sent %d acquires while the lock was held; want 0", herdWrites)
		}
		for i, o := range outcomes {
			if o != lockcore.Released || errs[i] != nil {
				t.Errorf("invocation %d: %v, %v; want RELEASED", i, o, errs[i])
			}
		}
	})
}
