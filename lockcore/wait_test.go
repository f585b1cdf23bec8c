package lockcore_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/lockcore/storeapi"
)

// crashHolder acquires the lock through a store that then refuses every
// renewal and release, and stops its timers: what waiters see of a holder
// that was killed. The returned reap waits for the dead holder's goroutine,
// which in a real crash would be gone, to finish its failing release.
func crashHolder(t *testing.T, s storeapi.Store, lease time.Duration) (reap func()) {
	t.Helper()
	dead := newLock(t, &hookStore{Store: s, renew: failRenew, release: failRelease}, "dead", lockcore.WithLease(lease))
	mustAcquire(t, dead)
	dead.CancelAutoRenewal()
	return func() { _ = dead.Release(context.Background(), lockcore.Failure, "") }
}

func TestWaiterGetsReleasedResult(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := lockcore.NewMemoryStore()
		m := &recMetrics{}
		holder, waiter := newLock(t, store, "h"), newLock(t, store, "w", lockcore.WithMetrics(m))
		mustAcquire(t, holder)
		fence := holder.Fence()
		go func() {
			time.Sleep(time.Second)
			mustRelease(t, holder, lockcore.Success, "ref-1")
		}()
		start := time.Now()
		res, err := waiter.TryAcquireElseWaitForRelease(context.Background())
		if err != nil || res.Outcome != lockcore.Released || res.ResultRef != "ref-1" || res.Fence != fence {
			t.Fatalf("TryAcquireElseWaitForRelease() = %+v, %v, want RELEASED ref-1 fence %d", res, err, fence)
		}
		// Seen at the first poll after the release: within one poll (+20%).
		if got := time.Since(start); got > time.Second+240*time.Millisecond {
			t.Errorf("waited %v, want at most 1.24s", got)
		}
		if res.Polls < 4 || waiter.HasLock() {
			t.Errorf("Polls = %d HasLock %v, want >= 4 polls and not held", res.Polls, waiter.HasLock())
		}
		if m.sum(lockcore.MetricWaitForLock) != 1 || m.sum(lockcore.MetricLockPollCount) != float64(res.Polls) ||
			m.sum(lockcore.MetricLockAcquisitionFailed) != 0 || m.sum(lockcore.MetricLockAcquisitionWaitTimeout) != 0 {
			t.Errorf("metrics = %v", m.got)
		}
	})
}

func TestFirstAttemptAcquires(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := lockcore.NewMemoryStore()
		m := &recMetrics{}
		l := newLock(t, store, "a", lockcore.WithMetrics(m))
		res, err := l.TryAcquireElseWaitForRelease(context.Background())
		if err != nil || res.Outcome != lockcore.Acquired || res.TookOver || res.Fence != l.Fence() || res.Polls != 0 {
			t.Fatalf("TryAcquireElseWaitForRelease() = %+v, %v, want ACQUIRED at once", res, err)
		}
		if m.sum(lockcore.MetricLockAcquisitionSuccess) != 1 || m.has(lockcore.MetricWaitForLock) {
			t.Errorf("metrics = %v", m.got)
		}
		mustRelease(t, l, lockcore.Success, "")
	})
}

func TestAlreadyHeldIsAcquiredWithoutWaiting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &hookStore{Store: lockcore.NewMemoryStore()}
		l := newLock(t, store, "a")
		mustAcquire(t, l)
		res, err := l.TryAcquireElseWaitForRelease(context.Background())
		if err != nil || res.Outcome != lockcore.Acquired || res.Fence != l.Fence() || res.Polls != 0 {
			t.Errorf("TryAcquireElseWaitForRelease() while held = %+v, %v, want ACQUIRED with our fence", res, err)
		}
		if store.n("acquire") != 1 {
			t.Errorf("acquire writes = %d, want 1: no second revision", store.n("acquire"))
		}
		mustRelease(t, l, lockcore.Success, "")
	})
}

func TestLateArrivalReadsAFreshSuccess(t *testing.T) {
	tests := []struct {
		name     string
		fresh    time.Duration // 0: the option is off
		lateBy   time.Duration
		want     lockcore.Outcome
		wantRef  string
		wantPoll int
	}{
		{"within the window", 5 * time.Second, 2 * time.Second, lockcore.Released, "data@1", 0},
		{"after the window", 5 * time.Second, 6 * time.Second, lockcore.Acquired, "", 0},
		{"option off", 0, 2 * time.Second, lockcore.Acquired, "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				mem := lockcore.NewMemoryStore()
				holder := newLock(t, mem, "h")
				mustAcquire(t, holder)
				fence := holder.Fence()
				mustRelease(t, holder, lockcore.Success, "data@1")
				time.Sleep(tt.lateBy)
				store := &hookStore{Store: mem}
				m := &recMetrics{}
				late := newLock(t, store, "late", lockcore.WithFreshSuccess(tt.fresh), lockcore.WithMetrics(m))
				res, err := late.TryAcquireElseWaitForRelease(context.Background())
				if err != nil || res.Outcome != tt.want || res.ResultRef != tt.wantRef || res.Polls != tt.wantPoll {
					t.Fatalf("TryAcquireElseWaitForRelease() = %+v, %v, want %v ref %q", res, err, tt.want, tt.wantRef)
				}
				if tt.want == lockcore.Released && res.Fence != fence {
					t.Errorf("Fence = %d, want the publishing holder's %d", res.Fence, fence)
				}
				if store.n("acquire") != 1 || store.n("get") != 0 {
					t.Errorf("requests: acquire %d get %d, want one conditional write and no read", store.n("acquire"), store.n("get"))
				}
				// Every outcome reports the same core counts.
				for _, name := range []string{lockcore.MetricLockAcquisitionSuccess, lockcore.MetricLockAcquisitionFailed, lockcore.MetricLockAcquisitionError} {
					if !m.has(name) {
						t.Errorf("metric %s not recorded", name)
					}
				}
				if late.HasLock() {
					mustRelease(t, late, lockcore.Success, "")
				}
			})
		})
	}
}

func TestWaitFails(t *testing.T) {
	tests := []struct {
		name    string
		maxWait time.Duration
		ctx     func() (context.Context, context.CancelFunc)
		want    time.Duration
		wantErr error
	}{
		{"maximum wait", 2 * time.Second, func() (context.Context, context.CancelFunc) {
			return context.WithCancel(context.Background())
		}, 2 * time.Second, lockcore.ErrWaitTimeout},
		{"context deadline first", time.Minute, func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 3*time.Second)
		}, 3 * time.Second, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				store := lockcore.NewMemoryStore()
				m := &recMetrics{}
				holder := newLock(t, store, "h")
				mustAcquire(t, holder)
				waiter := newLock(t, store, "w", lockcore.WithMaxWait(tt.maxWait), lockcore.WithMetrics(m))
				ctx, cancel := tt.ctx()
				defer cancel()
				start := time.Now()
				res, err := waiter.TryAcquireElseWaitForRelease(ctx)
				if res.Outcome != lockcore.Failed || err == nil {
					t.Fatalf("TryAcquireElseWaitForRelease() = %+v, %v, want FAILED", res, err)
				}
				if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
					t.Errorf("error = %v, want %v", err, tt.wantErr)
				}
				if got := time.Since(start); got != tt.want {
					t.Errorf("failed after %v, want %v", got, tt.want)
				}
				if m.sum(lockcore.MetricLockAcquisitionFailed) != 1 {
					t.Errorf("LockAcquisitionFailed = %v, want 1", m.sum(lockcore.MetricLockAcquisitionFailed))
				}
				mustRelease(t, holder, lockcore.Success, "")
			})
		})
	}
}

func TestWaitCancelledReturnsCause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := lockcore.NewMemoryStore()
		holder := newLock(t, store, "h")
		mustAcquire(t, holder)
		ctx, cancel := context.WithCancelCause(context.Background())
		stop := errors.New("shutting down")
		time.AfterFunc(500*time.Millisecond, func() { cancel(stop) })
		res, err := newLock(t, store, "w").TryAcquireElseWaitForRelease(ctx)
		if res.Outcome != lockcore.Failed || !errors.Is(err, stop) {
			t.Errorf("TryAcquireElseWaitForRelease() = %+v, %v, want FAILED with the cancel cause", res, err)
		}
		mustRelease(t, holder, lockcore.Success, "")
	})
}

func TestTakeOverOfCrashedHolder(t *testing.T) {
	tests := []struct {
		name      string
		opts      []lockcore.Option
		lateBy    time.Duration // how long after the crash the waiter arrives
		minTakeAt time.Duration // measured from the waiter's arrival
		maxTakeAt time.Duration
		waits     bool // false: the first conditional write already succeeds
	}{
		// Clock-free: unchanged (revision, beat) for lease*(1+ρ) + poll =
		// 2.02s + 0.2s, seen at a poll of up to 240ms.
		{"clock-free", []lockcore.Option{lockcore.WithClocks(lockcore.Clocks{NoWallClockPath: true})}, 0, 2220 * time.Millisecond, 2460 * time.Millisecond, true},
		{"clock-free, arriving late", []lockcore.Option{lockcore.WithClocks(lockcore.Clocks{NoWallClockPath: true})}, 10 * time.Second, 2220 * time.Millisecond, 2460 * time.Millisecond, true},
		// Wall clock: leaseUntil + ε has long passed, so the first
		// conditional write takes it, without waiting.
		{"wall clock, arriving late", nil, 10 * time.Second, 0, 0, false},
		// Wall clock on, arriving at once: leaseUntil (2s) + ε (1s) is later
		// than the clock-free bound, which decides.
		{"both paths, arriving at once", nil, 0, 2220 * time.Millisecond, 2460 * time.Millisecond, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				mem := lockcore.NewMemoryStore()
				m := &recMetrics{}
				reap := crashHolder(t, mem, 2*time.Second)
				defer reap()
				time.Sleep(tt.lateBy)
				opts := append([]lockcore.Option{lockcore.WithLease(2 * time.Second), lockcore.WithMetrics(m)}, tt.opts...)
				w := newLock(t, mem, "w", opts...)
				start := time.Now()
				res, err := w.TryAcquireElseWaitForRelease(context.Background())
				took := time.Since(start)
				if err != nil || res.Outcome != lockcore.Acquired || res.TookOver != tt.waits {
					t.Fatalf("TryAcquireElseWaitForRelease() = %+v, %v, want ACQUIRED, TookOver %v", res, err, tt.waits)
				}
				if took < tt.minTakeAt || took > tt.maxTakeAt {
					t.Errorf("took over after %v, want within [%v, %v]", took, tt.minTakeAt, tt.maxTakeAt)
				}
				if w.Fence() != res.Fence || w.TookOver() != tt.waits {
					t.Errorf("lock Fence %d TookOver %v, want %d, %v", w.Fence(), w.TookOver(), res.Fence, tt.waits)
				}
				if want := boolMetric(tt.waits); m.sum(lockcore.MetricTakeover) != want {
					t.Errorf("LockTakeover = %v, want %v", m.sum(lockcore.MetricTakeover), want)
				}
				mustRelease(t, w, lockcore.Success, "")
			})
		})
	}
}

// herd starts n waiters on store and returns their results once all end.
func herd(t *testing.T, store storeapi.Store, n int, opts ...lockcore.Option) []lockcore.WaitResult {
	results := make([]lockcore.WaitResult, n)
	var wg sync.WaitGroup
	for i := range n {
		w := newLock(t, store, "w", opts...)
		wg.Go(func() {
			res, err := w.TryAcquireElseWaitForRelease(context.Background())
			if err != nil {
				t.Errorf("waiter %d: %v", i, err)
			}
			if res.Outcome == lockcore.Acquired {
				time.Sleep(300 * time.Millisecond) // the work
				if err := w.Release(context.Background(), lockcore.Success, "data"); err != nil {
					t.Errorf("waiter %d release: %v", i, err)
				}
			}
			results[i] = res
		})
	}
	wg.Wait()
	return results
}

func tally(results []lockcore.WaitResult) (acquired, takeovers, afterFailure, released int) {
	for _, r := range results {
		switch r.Outcome {
		case lockcore.Acquired:
			acquired++
			if r.TookOver {
				takeovers++
			}
			if r.AfterFailure {
				afterFailure++
			}
		case lockcore.Released:
			released++
		}
	}
	return
}

func TestAbandonedLockIsTakenOverByExactlyOneWaiter(t *testing.T) {
	tests := []struct {
		name    string
		after   bool // the holder published a failure: the waiter's acquire is AfterFailure, not TookOver
		abandon func(t *testing.T, mem *lockcore.MemoryStore) (reap func())
	}{
		{"released as failure", true, func(t *testing.T, mem *lockcore.MemoryStore) func() {
			h := newLock(t, mem, "h")
			mustAcquire(t, h)
			time.AfterFunc(time.Second, func() { mustRelease(t, h, lockcore.Failure, "") })
			return func() {}
		}},
		{"crashed", false, func(t *testing.T, mem *lockcore.MemoryStore) func() {
			return crashHolder(t, mem, 2*time.Second)
		}},
		// The holder's invocation ran out of time: the lock released the
		// failure by itself (reason context_ended), not the holder.
		{"ran out of time", false, func(t *testing.T, mem *lockcore.MemoryStore) func() {
			h := newLock(t, mem, "h")
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			if ok, err := h.Acquire(ctx); !ok || err != nil {
				t.Fatalf("Acquire() = %v, %v", ok, err)
			}
			return cancel
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				mem := lockcore.NewMemoryStore()
				defer tt.abandon(t, mem)()
				m := &recMetrics{}
				results := herd(t, mem, 10, lockcore.WithLease(2*time.Second), lockcore.WithMetrics(m))
				acquired, takeovers, afterFailure, released := tally(results)
				wantTake, wantAfter := boolCount(!tt.after), boolCount(tt.after)
				if acquired != 1 || takeovers != wantTake || afterFailure != wantAfter || released != 9 {
					t.Errorf("acquired %d, takeovers %d, after a failure %d, released %d; want 1, %d, %d, 9",
						acquired, takeovers, afterFailure, released, wantTake, wantAfter)
				}
				if m.sum(lockcore.MetricTakeover) != float64(wantTake) || m.sum(lockcore.MetricRetryAfterFailure) != float64(wantAfter) {
					t.Errorf("LockTakeover %v, LockRetryAfterFailure %v; want %d, %d",
						m.sum(lockcore.MetricTakeover), m.sum(lockcore.MetricRetryAfterFailure), wantTake, wantAfter)
				}
			})
		})
	}
}

func TestHerdFetchesOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := lockcore.NewMemoryStore()
		results := herd(t, mem, 50)
		acquired, takeovers, _, released := tally(results)
		if acquired != 1 || takeovers != 0 || released != 49 {
			t.Errorf("acquired %d takeovers %d released %d, want 1, 0, 49", acquired, takeovers, released)
		}
	})
}

// TestReleaseNoticedWhateverTheHoldsHistory: however many waiters came and
// left during a hold, a new waiter notices the release within one poll
// interval plus jitter plus one read, and every waiter makes one read per
// poll interval, no more (there is no enrolment write on the item).
func TestReleaseNoticedWhateverTheHoldsHistory(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := lockcore.NewMemoryStore()
		store := &hookStore{Store: mem}
		holder := newLock(t, mem, "h", lockcore.WithMaxHold(time.Hour))
		mustAcquire(t, holder)
		const departed, batch = 2000, 500
		for range departed / batch {
			var wg sync.WaitGroup
			for range batch {
				w := newLock(t, store, "gone", lockcore.WithMaxWait(300*time.Millisecond))
				wg.Go(func() {
					if res, _ := w.TryAcquireElseWaitForRelease(context.Background()); res.Outcome != lockcore.Failed {
						t.Errorf("departing waiter = %v, want FAILED (timed out)", res.Outcome)
					}
				})
			}
			wg.Wait()
		}
		if n := store.n("acquire") + store.n("get"); n > departed*3 {
			t.Errorf("departed waiters made %d requests, want at most %d (1 write and up to 2 reads each)", n, departed*3)
		}

		w := newLock(t, store, "w")
		done := make(chan lockcore.WaitResult)
		go func() {
			res, err := w.TryAcquireElseWaitForRelease(context.Background())
			if err != nil {
				t.Errorf("TryAcquireElseWaitForRelease() = %v", err)
			}
			done <- res
		}()
		time.Sleep(5 * time.Second)
		mustRelease(t, holder, lockcore.Success, "data")
		released := time.Now()
		res := <-done
		// Poll 200ms +20% jitter; the memory store's read takes no time.
		if got := time.Since(released); res.Outcome != lockcore.Released || got > 240*time.Millisecond {
			t.Errorf("new waiter: %v after %v, want RELEASED within 240ms of the release", res.Outcome, got)
		}
		if res.Polls > int(5*time.Second/(160*time.Millisecond))+2 {
			t.Errorf("new waiter polled %d times in 5s, want one read per poll interval (at most %d)", res.Polls, int(5*time.Second/(160*time.Millisecond))+2)
		}
	})
}

func TestAcquireResolvesAnUnknownOutcome(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := lockcore.NewMemoryStore()
		store := &hookStore{Store: mem}
		// Applied, but the response is lost.
		store.acquire = func(ctx context.Context, req storeapi.AcquireRequest) (storeapi.Item, error) {
			if _, err := mem.Acquire(ctx, req); err != nil {
				return storeapi.Item{}, err
			}
			return storeapi.Item{}, errInjected
		}
		l := newLock(t, store, "a")
		mustAcquire(t, l)
		it, _, _ := mem.Get(context.Background(), l.Key())
		if it.Revision != l.Revision() || l.Fence() != it.Fence {
			t.Errorf("hold revision %q fence %d, item %q %d: want the applied write's", l.Revision(), l.Fence(), it.Revision, it.Fence)
		}
		mustRelease(t, l, lockcore.Success, "")
	})
}

func TestUnresolvedAcquireFreesItsGhostHold(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := lockcore.NewMemoryStore()
		// The write is applied, its response lost, and the settling read
		// fails too: the outcome stays unknown.
		store := &hookStore{Store: mem,
			acquire: func(ctx context.Context, req storeapi.AcquireRequest) (storeapi.Item, error) {
				if _, err := mem.Acquire(ctx, req); err != nil {
					return storeapi.Item{}, err
				}
				return storeapi.Item{}, errInjected
			},
			get: func(context.Context, lockcore.Key) (storeapi.Item, bool, error) {
				return storeapi.Item{}, false, errInjected
			},
		}
		l := newLock(t, store, "a")
		if ok, err := l.Acquire(context.Background()); ok || !errors.Is(err, errInjected) {
			t.Fatalf("Acquire() = %v, %v, want false with the store error", ok, err)
		}
		it, _, _ := mem.Get(context.Background(), l.Key())
		if !it.Released || it.Result != lockcore.Failure {
			t.Errorf("ghost item released %v result %q, want released as failure for the next waiter", it.Released, it.Result)
		}
		next := newLock(t, mem, "b")
		if ok, err := next.Acquire(context.Background()); !ok || err != nil {
			t.Errorf("next Acquire() = %v, %v, want the lock free at once", ok, err)
		}
		mustRelease(t, next, lockcore.Success, "")
	})
}

func TestStoreErrorsFailClearly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := lockcore.NewMemoryStore()
		store := &hookStore{Store: mem,
			acquire: func(context.Context, storeapi.AcquireRequest) (storeapi.Item, error) {
				return storeapi.Item{}, errInjected
			},
		}
		m := &recMetrics{}
		l := newLock(t, store, "a", lockcore.WithMetrics(m))
		ok, err := l.Acquire(context.Background())
		var ae *lockcore.AcquireError
		if ok || !errors.As(err, &ae) || ae.Reason != lockcore.ReasonStore || !errors.Is(err, errInjected) {
			t.Fatalf("Acquire() = %v, %v, want AcquireError store_error wrapping the cause", ok, err)
		}
		res, err := l.TryAcquireElseWaitForRelease(context.Background())
		if res.Outcome != lockcore.Failed || !errors.As(err, &ae) {
			t.Errorf("TryAcquireElseWaitForRelease() = %+v, %v, want FAILED with AcquireError", res, err)
		}
		if m.sum(lockcore.MetricLockAcquisitionError) != 1 {
			t.Errorf("LockAcquisitionError = %v, want 1", m.sum(lockcore.MetricLockAcquisitionError))
		}
	})
}

func TestPollErrorsEndInATimeoutThatNamesThem(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := lockcore.NewMemoryStore()
		holder := newLock(t, mem, "h")
		mustAcquire(t, holder)
		store := &hookStore{Store: mem, get: func(context.Context, lockcore.Key) (storeapi.Item, bool, error) {
			return storeapi.Item{}, false, errInjected
		}}
		res, err := newLock(t, store, "w", lockcore.WithMaxWait(time.Second)).TryAcquireElseWaitForRelease(context.Background())
		if res.Outcome != lockcore.Failed || !errors.Is(err, lockcore.ErrWaitTimeout) || !errors.Is(err, errInjected) {
			t.Errorf("TryAcquireElseWaitForRelease() = %+v, %v, want FAILED timeout naming the poll error", res, err)
		}
		mustRelease(t, holder, lockcore.Success, "")
	})
}

func TestHungStoreEndsTheWaitOnTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := lockcore.NewMemoryStore()
		holder := newLock(t, mem, "h")
		mustAcquire(t, holder)
		// Every read hangs until its context ends.
		store := &hookStore{Store: mem, get: func(ctx context.Context, _ lockcore.Key) (storeapi.Item, bool, error) {
			<-ctx.Done()
			return storeapi.Item{}, false, ctx.Err()
		}}
		start := time.Now()
		res, err := newLock(t, store, "w", lockcore.WithMaxWait(2*time.Second)).TryAcquireElseWaitForRelease(context.Background())
		if res.Outcome != lockcore.Failed || !errors.Is(err, lockcore.ErrWaitTimeout) {
			t.Errorf("TryAcquireElseWaitForRelease() = %+v, %v, want FAILED timeout", res, err)
		}
		if got := time.Since(start); got != 2*time.Second {
			t.Errorf("returned after %v, want exactly the 2s maximum wait", got)
		}
		mustRelease(t, holder, lockcore.Success, "")
	})
}

func TestNoTimeLeft(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := params("a")
		p.RemainingTime = func() time.Duration { return 50 * time.Millisecond }
		l, err := lockcore.New(lockcore.NewMemoryStore(), p, lockcore.WithLogger(quiet))
		if err != nil {
			t.Fatal(err)
		}
		res, err := l.TryAcquireElseWaitForRelease(context.Background())
		var ae *lockcore.AcquireError
		if res.Outcome != lockcore.Failed || !errors.Is(err, lockcore.ErrNoTimeLeft) || !errors.As(err, &ae) || ae.Reason != lockcore.ReasonNoTimeLeft {
			t.Errorf("TryAcquireElseWaitForRelease() = %+v, %v, want FAILED no_time_left", res, err)
		}
	})
}

func TestSkewedWaiterClockCannotStealWithoutTheWallClockPath(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := lockcore.NewMemoryStore()
		holder := newLock(t, mem, "h", lockcore.WithLease(2*time.Second))
		mustAcquire(t, holder)
		w := newLock(t, mem, "w", lockcore.WithLease(2*time.Second), lockcore.WithClocks(lockcore.Clocks{NoWallClockPath: true}),
			lockcore.WithClocks(lockcore.Clocks{Wall: skewed(time.Hour)}), lockcore.WithMaxWait(10*time.Second))
		res, err := w.TryAcquireElseWaitForRelease(context.Background())
		if res.Outcome != lockcore.Failed || !errors.Is(err, lockcore.ErrWaitTimeout) {
			t.Errorf("TryAcquireElseWaitForRelease() = %+v, %v, want FAILED: the holder renews throughout", res, err)
		}
		if !holder.HasLock() || holder.Context().Err() != nil {
			t.Error("holder lost its lock to a waiter with a fast clock")
		}
		mustRelease(t, holder, lockcore.Success, "")
	})
}

func boolMetric(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

type skewed time.Duration

func (s skewed) Now() time.Time { return time.Now().Add(time.Duration(s)) }

func TestOutcomeString(t *testing.T) {
	tests := []struct {
		o    lockcore.Outcome
		want string
	}{
		{lockcore.Acquired, "ACQUIRED"}, {lockcore.Released, "RELEASED"}, {lockcore.Failed, "FAILED"},
	}
	for _, tt := range tests {
		if got := tt.o.String(); got != tt.want {
			t.Errorf("Outcome(%d).String() = %q, want %q", tt.o, got, tt.want)
		}
	}
}

func boolCount(b bool) int {
	if b {
		return 1
	}
	return 0
}
