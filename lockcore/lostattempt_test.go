package lockcore_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/lockcore/storeapi"
)

var errServer = errors.New("lockcore: dynamodb acquire: InternalServerError: status code: 500")

// newLostFirst returns a late-copy store over inner whose first acquire is
// answered with a server error (a 5xx) and not applied, while a copy of it
// is still on its way: the test lands that copy later with land.
func newLostFirst(inner storeapi.Store) *lateCopy {
	s := newLateCopy(inner)
	s.acquire = func(ctx context.Context, req storeapi.AcquireRequest) (storeapi.Item, error) {
		s.mu.Lock()
		first := s.first == nil
		if first {
			r := req
			s.first = &r
		}
		s.mu.Unlock()
		if first {
			close(s.refused)
			return storeapi.Item{}, errServer
		}
		return inner.Acquire(ctx, req)
	}
	return s
}

// failFirstStep makes l's call whose acquire the store answers with a 5xx
// (not applied, as the settling read shows) and checks that it fails with
// store_error.
type failFirstStep func(t *testing.T, l *lockcore.Lock)

func failWait(t *testing.T, l *lockcore.Lock) {
	t.Helper()
	res, err := l.TryAcquireElseWaitForRelease(context.Background())
	var ae *lockcore.AcquireError
	if res.Outcome != lockcore.Failed || !errors.As(err, &ae) || ae.Reason != lockcore.ReasonStore || !errors.Is(err, errServer) {
		t.Fatalf("failing call = %v, %v; want FAILED with store_error wrapping the 5xx", res.Outcome, err)
	}
}

func failAcquire(t *testing.T, l *lockcore.Lock) {
	t.Helper()
	ok, err := l.Acquire(context.Background())
	var ae *lockcore.AcquireError
	if ok || !errors.As(err, &ae) || ae.Reason != lockcore.ReasonStore || !errors.Is(err, errServer) {
		t.Fatalf("failing Acquire() = %v, %v; want false with store_error wrapping the 5xx", ok, err)
	}
}

// A call whose first acquire is answered with a 5xx and applied only after
// its settling read (found nothing) fails with store_error, and the late
// copy then holds the key for nobody. The execution environment's next
// call (a new Lock on the same store, as the failure's retry or the next
// invocation is) reads that copy, frees it with a release conditioned on
// its revision and acquires at once: ACQUIRED without a take-over, instead
// of waiting out the copy's lease (6s) and taking it over, counted as
// LockTakeover. It does so however late the copy lands: also after another
// call held the key and published (for the wait's first step, a failure:
// a success published after the call began is news to it, and guard B
// keeps every copy of its write off that success).
func TestNextCallFreesTheLateCopyOfAFailedAcquire(t *testing.T) {
	tests := []struct {
		name    string
		fail    failFirstStep
		between func(t *testing.T, s storeapi.Store, env lockcore.Option) // before the copy lands; nil: nothing
	}{
		{"wait's first step", failWait, nil},
		{"Acquire", failAcquire, nil},
		{"wait's first step, the copy landing after another call published a failure", failWait, publishFailure},
		{"Acquire, the copy landing after another call published", failAcquire, publishSuccess},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				mem := lockcore.NewMemoryStore()
				store := newLostFirst(mem)
				env := lockcore.WithHerd(lockcore.Herd{HotKeys: lockcore.NewHotKeys(lockcore.DefaultHotKeys)}) // the environment's memory, as its store's
				tt.fail(t, newLock(t, store, "failed", lockcore.WithLease(6*time.Second), env))
				if tt.between != nil {
					tt.between(t, store, env)
				}
				time.Sleep(100 * time.Millisecond)
				landed := store.land(t)

				m := &recMetrics{}
				next := newLock(t, store, "next", lockcore.WithLease(6*time.Second), lockcore.WithMetrics(m), env)
				start := time.Now()
				res, err := next.TryAcquireElseWaitForRelease(context.Background())
				took := time.Since(start)
				if err != nil || res.Outcome != lockcore.Acquired {
					t.Fatalf("next call = %+v, %v; want ACQUIRED", res, err)
				}
				if res.TookOver {
					t.Errorf("next call took over after %v, want no take-over: the copy was nobody's", res.Waited)
				}
				if took > time.Second {
					t.Errorf("next call took %v, want well within a second: no wait for the late copy's lease", took)
				}
				if got := m.sum(lockcore.MetricTakeover); got != 0 {
					t.Errorf("LockTakeover = %v, want 0", got)
				}
				if got := m.sum(lockcore.MetricLateCopy); got != 1 {
					t.Errorf("LockLateCopy = %v, want 1", got)
				}
				if !next.Valid() || next.Revision() == landed.Revision || res.Fence <= landed.Fence {
					t.Errorf("next hold: valid %v, revision %q (late copy %q), fence %d (late copy %d); want a valid hold above the copy",
						next.Valid(), next.Revision(), landed.Revision, res.Fence, landed.Fence)
				}
				mustRelease(t, next, lockcore.Success, "ref")
			})
		})
	}
}

// publishSuccess is another call that acquires the lock on s, does its
// work and publishes success.
func publishSuccess(t *testing.T, s storeapi.Store, env lockcore.Option) {
	t.Helper()
	publish(t, s, env, lockcore.Success)
}

// publishFailure is another call that acquires the lock on s, works and
// publishes failure (unpaced: it holds nobody back).
func publishFailure(t *testing.T, s storeapi.Store, env lockcore.Option) {
	t.Helper()
	publish(t, s, env, lockcore.Failure)
}

func publish(t *testing.T, s storeapi.Store, env lockcore.Option, result lockcore.Result) {
	t.Helper()
	other := newLock(t, s, "other", env)
	if res, err := other.TryAcquireElseWaitForRelease(context.Background()); err != nil || res.Outcome != lockcore.Acquired {
		t.Fatalf("other call = %+v, %v; want ACQUIRED", res, err)
	}
	time.Sleep(time.Second)
	mustRelease(t, other, result, "ref")
}

// A Lock on another store (another execution environment) does not know
// the revision: the late copy is, for it, a holder that stopped, taken
// over after a lease as before. Only the environment that gave the
// acquire up frees it.
func TestALateCopyIsFreedOnlyByItsOwnEnvironment(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := lockcore.NewMemoryStore()
		store := newLostFirst(mem)
		failWait(t, newLock(t, store, "failed", lockcore.WithLease(6*time.Second), lockcore.WithHerd(lockcore.Herd{HotKeys: lockcore.NewHotKeys(lockcore.DefaultHotKeys)})))
		store.land(t)

		elsewhere := &hookStore{Store: mem}
		other, err := lockcore.New(elsewhere, params("elsewhere"), lockcore.WithLogger(quiet), lockcore.WithLease(6*time.Second),
			lockcore.WithHerd(lockcore.Herd{HotKeys: lockcore.NewHotKeys(lockcore.DefaultHotKeys)}))
		if err != nil {
			t.Fatal(err)
		}
		res, err := other.TryAcquireElseWaitForRelease(context.Background())
		if err != nil || res.Outcome != lockcore.Acquired || !res.TookOver {
			t.Fatalf("other environment = %+v, %v; want ACQUIRED by taking over", res, err)
		}
		if n := elsewhere.n("release"); n != 0 {
			t.Errorf("releases by the other environment = %d, want 0: it frees no revision it does not know", n)
		}
		mustRelease(t, other, lockcore.Success, "")
	})
}

// The same on DynamoDB's API (Dynoxide, dynalite) as on the memory store,
// in real time: the late copy lands through the store's real condition,
// and the next call frees it and acquires well within the copy's lease.
func TestNextCallFreesTheLateCopyOfAFailedAcquireOnEveryStore(t *testing.T) {
	for _, st := range everyStore() {
		t.Run(st.name, func(t *testing.T) {
			store := newLostFirst(st.new(t))
			env := lockcore.WithHerd(lockcore.Herd{HotKeys: lockcore.NewHotKeys(lockcore.DefaultHotKeys)})
			failWait(t, newLock(t, store, "failed", env))
			landed := store.land(t)

			next := newLock(t, store, "next", env)
			start := time.Now()
			res, err := next.TryAcquireElseWaitForRelease(context.Background())
			if err != nil || res.Outcome != lockcore.Acquired {
				t.Fatalf("next call = %+v, %v; want ACQUIRED", res, err)
			}
			if res.TookOver || res.Fence <= landed.Fence {
				t.Errorf("next call = %+v; want it above the late copy's fence %d, no take-over", res, landed.Fence)
			}
			if took := time.Since(start); took >= next.Lease()/2 {
				t.Errorf("next call took %v, want well within the copy's lease (%v)", took, next.Lease())
			}
			mustRelease(t, next, lockcore.Success, "ref")
		})
	}
}

// A copy of a wait's refused attempt that lands after the wait returned
// (RELEASED: the holder published) holds the key for nobody, as the failed
// call's does: the environment's next call frees it and acquires at once,
// without a take-over.
func TestNextCallFreesTheLateCopyOfAWaitThatReturned(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := lockcore.NewMemoryStore()
		env := startedEnvironment(t, mem)
		holder, store := heldWithLateCopy(t, mem)
		done := waitInBackground(newLock(t, store, "waiter", lockcore.WithLease(6*time.Second), env))
		synctest.Wait() // refused over the holder: waiting
		mustRelease(t, holder, lockcore.Success, "ref")
		if got := <-done; got.err != nil || got.res.Outcome != lockcore.Released {
			t.Fatalf("wait = %v, %v, want RELEASED", got.res.Outcome, got.err)
		}
		landed := store.land(t)

		m := &recMetrics{}
		next := newLock(t, store, "next", lockcore.WithLease(6*time.Second), lockcore.WithMetrics(m), env)
		res, err := next.TryAcquireElseWaitForRelease(context.Background())
		if err != nil || res.Outcome != lockcore.Acquired {
			t.Fatalf("next call = %+v, %v; want ACQUIRED", res, err)
		}
		if res.TookOver || res.Waited > time.Second || m.sum(lockcore.MetricTakeover) != 0 || res.Fence <= landed.Fence {
			t.Errorf("next call = %+v, LockTakeover %v; want ACQUIRED above the copy's fence %d within a second, no take-over",
				res, m.sum(lockcore.MetricTakeover), landed.Fence)
		}
		mustRelease(t, next, lockcore.Success, "ref")
	})
}

// startedEnvironment returns the memory of an execution environment that
// acquired the tests' key on s at once and released it, as an option for
// the Locks of that environment: the key is cold there (see
// lockcore.HotKeys), so its next call on it writes first.
func startedEnvironment(t *testing.T, s storeapi.Store) lockcore.Option {
	t.Helper()
	env := lockcore.WithHerd(lockcore.Herd{HotKeys: lockcore.NewHotKeys(lockcore.DefaultHotKeys)})
	l, err := lockcore.New(s, params("started"), lockcore.WithLogger(quiet), env)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := l.TryAcquireElseWaitForRelease(context.Background()); err != nil || res.Outcome != lockcore.Acquired {
		t.Fatalf("started: TryAcquireElseWaitForRelease() = %+v, %v, want Acquired", res, err)
	}
	mustRelease(t, l, lockcore.Success, "")
	return env
}

// A wait that holds the late copy of its own attempt does not leave that
// revision to its environment: another call there waits on the hold (here
// until its maximum wait), and does not free it under its holder.
func TestAHeldLateCopyIsNotGivenUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := lockcore.NewMemoryStore()
		env := startedEnvironment(t, mem)
		holder, store := heldWithLateCopy(t, mem)
		w := newLock(t, store, "waiter", lockcore.WithLease(6*time.Second), env)
		done := waitInBackground(w)
		synctest.Wait() // refused over the holder: waiting
		forceRelease(t, mem, holder.Key())
		landed := store.land(t)
		if got := <-done; got.err != nil || got.res.Outcome != lockcore.Acquired || w.Revision() != landed.Revision {
			t.Fatalf("wait = %+v, %v; want ACQUIRED, holding its late copy", got.res, got.err)
		}

		other := newLock(t, store, "other", lockcore.WithMaxWait(time.Second), env)
		res, err := other.TryAcquireElseWaitForRelease(context.Background())
		if res.Outcome != lockcore.Failed || !errors.Is(err, lockcore.ErrWaitTimeout) {
			t.Errorf("other call = %+v, %v; want FAILED with ErrWaitTimeout, waiting on the hold", res, err)
		}
		if it, _, _ := mem.Get(context.Background(), w.Key()); !w.Valid() || it.Revision != landed.Revision || it.Released {
			t.Errorf("waiter valid %v, item %+v; want the waiter's hold of revision %q intact", w.Valid(), it, landed.Revision)
		}
		mustRelease(t, w, lockcore.Success, "ref")
		_ = holder.Release(context.Background(), lockcore.Failure, "") // stops its keeper
	})
}

// throttledTakeover is a waiter's store on which every acquire is
// throttled, each request kept, until the test lands one of them as the
// late copy that got through (landCopy); then acquires pass.
type throttledTakeover struct {
	hookStore
	mu     sync.Mutex
	sent   []storeapi.AcquireRequest
	landed bool
}

func newThrottledTakeover(inner storeapi.Store) *throttledTakeover {
	s := &throttledTakeover{hookStore: hookStore{Store: inner}}
	s.acquire = func(ctx context.Context, req storeapi.AcquireRequest) (storeapi.Item, error) {
		s.mu.Lock()
		landed := s.landed
		if !landed {
			s.sent = append(s.sent, req)
		}
		s.mu.Unlock()
		if !landed {
			return storeapi.Item{}, errThrottle
		}
		return inner.Acquire(ctx, req)
	}
	return s
}

// landCopy applies the request sent back-th from the last (1: the last) to
// the inner store, as a copy that got past the throttle, and lets later
// acquires pass.
func (s *throttledTakeover) landCopy(t *testing.T, back int) storeapi.Item {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.sent) < back {
		t.Fatalf("the waiter sent %d acquires, want at least %d", len(s.sent), back)
	}
	req := s.sent[len(s.sent)-back]
	it, err := s.Store.Acquire(context.Background(), req)
	if err != nil {
		t.Fatalf("late copy: Acquire() = %v, want it to take over the crashed holder", err)
	}
	s.landed = true
	return it
}

// A late copy of a take-over attempt takes over a crashed holder's lease
// for nobody; the wait that frees it and then holds the lock is the first
// caller to hold it since the crash: it took over an abandoned lease, and
// is told so (TookOver, LockTakeover), as it is when no copy lands (it
// then takes the copy over after a lease). Freeing the copy itself says
// nothing about what the copy replaced. Both where the copy is the wait's
// own attempt, read after that attempt's validity, and where it is an
// attempt of an earlier call of the environment that returned.
func TestAcquireOverAFreedCopyOfATakeoverIsATakeover(t *testing.T) {
	tests := []struct {
		name string
		next bool // the copy is freed by the environment's next call, not by the wait that sent it
	}{
		{"the same wait", false},
		{"the environment's next call", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				mem := lockcore.NewMemoryStore()
				env := startedEnvironment(t, mem)
				reap := crashHolder(t, mem, 2*time.Second)
				defer reap()
				store := newThrottledTakeover(mem)
				m := &recMetrics{}
				opts := []lockcore.Option{lockcore.WithLease(time.Second), lockcore.WithPollInterval(600 * time.Millisecond), env}
				if !tt.next {
					opts = append(opts, lockcore.WithMetrics(m))
				} else {
					opts = append(opts, lockcore.WithMaxWait(7*time.Second))
				}
				w := newLock(t, store, "waiter", opts...)
				done := waitInBackground(w)
				time.Sleep(6500 * time.Millisecond) // the crashed lease is stale: its take-over attempts are throttled
				synctest.Wait()

				var landed storeapi.Item
				var res lockcore.WaitResult
				var err error
				var holder *lockcore.Lock
				if !tt.next {
					landed = store.landCopy(t, 3) // sent >= 0.96s ago: past its validity (0.9s), still among the wait's attempts
					got := <-done
					res, err, holder = got.res, got.err, w
				} else {
					if got := <-done; got.res.Outcome != lockcore.Failed {
						t.Fatalf("first call = %+v, %v; want FAILED (throttled until its maximum wait)", got.res, got.err)
					}
					landed = store.landCopy(t, 1)
					holder = newLock(t, mem, "next", lockcore.WithLease(time.Second), lockcore.WithMetrics(m), env)
					res, err = holder.TryAcquireElseWaitForRelease(context.Background())
				}
				if err != nil || res.Outcome != lockcore.Acquired || holder.Revision() == landed.Revision {
					t.Fatalf("wait = %+v, %v; want ACQUIRED anew over the freed copy", res, err)
				}
				if m.sum(lockcore.MetricLateCopy) != 1 {
					t.Errorf("LockLateCopy = %v, want 1: the copy was freed", m.sum(lockcore.MetricLateCopy))
				}
				if !res.TookOver || !holder.TookOver() || res.AfterFailure || m.sum(lockcore.MetricTakeover) != 1 {
					t.Errorf("wait = %+v (lock TookOver %v), LockTakeover %v; want a take-over of the crashed lease, counted once",
						res, holder.TookOver(), m.sum(lockcore.MetricTakeover))
				}
				mustRelease(t, holder, lockcore.Success, "")
			})
		})
	}
}

// A plain Acquire that does not acquire because another call holds the
// lock may still have a copy of its request on its way: its answer was a
// 5xx and the settling read found the holder (Acquire reports false, no
// error), or it was refused while an earlier copy was held up. When the
// holder releases, the copy lands and holds the key for nobody, as the
// copy of a failed call's acquire does: the environment's next call frees
// it and acquires at once, without a take-over, instead of waiting out the
// copy's lease (6s) and taking it over.
func TestNextCallFreesTheLateCopyOfAnAcquireThatFoundTheLockHeld(t *testing.T) {
	tests := []struct {
		name  string
		store func(storeapi.Store) *lateCopy
	}{
		{"answered with a 5xx, settled over the holder", newLostFirst},
		{"refused over the holder", newLateCopy},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				mem := lockcore.NewMemoryStore()
				env := startedEnvironment(t, mem)
				holder := newLock(t, mem, "holder", lockcore.WithLease(6*time.Second), env)
				mustAcquire(t, holder)
				store := tt.store(mem)
				if ok, err := newLock(t, store, "tried", lockcore.WithLease(6*time.Second), env).Acquire(context.Background()); ok || err != nil {
					t.Fatalf("Acquire() over the holder = %v, %v; want false, nil", ok, err)
				}
				time.Sleep(time.Second)
				mustRelease(t, holder, lockcore.Success, "ref")
				landed := store.land(t)

				m := &recMetrics{}
				next := newLock(t, store, "next", lockcore.WithLease(6*time.Second), lockcore.WithMetrics(m), env)
				res, err := next.TryAcquireElseWaitForRelease(context.Background())
				if err != nil || res.Outcome != lockcore.Acquired {
					t.Fatalf("next call = %+v, %v; want ACQUIRED", res, err)
				}
				if res.TookOver || res.Waited > time.Second || m.sum(lockcore.MetricTakeover) != 0 || res.Fence <= landed.Fence {
					t.Errorf("next call = %+v, LockTakeover %v; want ACQUIRED above the copy's fence %d within a second, no take-over",
						res, m.sum(lockcore.MetricTakeover), landed.Fence)
				}
				if got := m.sum(lockcore.MetricLateCopy); got != 1 {
					t.Errorf("LockLateCopy = %v, want 1", got)
				}
				mustRelease(t, next, lockcore.Success, "ref")
			})
		})
	}
}

// secondCopyHolders are the holders between a failed call's two late
// copies, in order, and what each publishes.
var secondCopyHolders = []struct {
	owner  string
	result lockcore.Result
}{{"next", lockcore.Success}, {"then", lockcore.Failure}}

// A request held up in the network can land more than once (each of the
// SDK's retries is a copy). Guard D refuses a second copy only while the
// item carries the revision, as its own or the one it replaced: once two
// more holders have come and gone, a second copy of a failed call's
// acquire lands again and holds the key for nobody (here on the failure
// the second holder published: guard B keeps it off a success published
// after the failed call began). The environment still knows that
// revision: its next call frees this copy too, at once, without a
// take-over.
func TestNextCallFreesASecondLateCopyOfAFailedAcquire(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := lockcore.NewMemoryStore()
		store := newLostFirst(mem)
		env := lockcore.WithHerd(lockcore.Herd{HotKeys: lockcore.NewHotKeys(lockcore.DefaultHotKeys)})
		failWait(t, newLock(t, store, "failed", lockcore.WithLease(6*time.Second), env))
		store.land(t)
		for _, h := range secondCopyHolders { // the first copy freed by the next call; one more holder after it
			l := newLock(t, mem, h.owner, lockcore.WithLease(6*time.Second), env)
			if res, err := l.TryAcquireElseWaitForRelease(context.Background()); err != nil || res.Outcome != lockcore.Acquired {
				t.Fatalf("%s call = %+v, %v; want ACQUIRED", h.owner, res, err)
			}
			time.Sleep(time.Second)
			mustRelease(t, l, h.result, "")
		}
		again := store.land(t) // the second copy: the item no longer carries its revision

		m := &recMetrics{}
		last := newLock(t, mem, "last", lockcore.WithLease(6*time.Second), lockcore.WithMetrics(m), env)
		res, err := last.TryAcquireElseWaitForRelease(context.Background())
		if err != nil || res.Outcome != lockcore.Acquired {
			t.Fatalf("last call = %+v, %v; want ACQUIRED", res, err)
		}
		if res.TookOver || res.Waited > time.Second || m.sum(lockcore.MetricLateCopy) != 1 || res.Fence <= again.Fence {
			t.Errorf("last call = %+v, LockLateCopy %v; want ACQUIRED above the second copy's fence %d within a second, the copy freed",
				res, m.sum(lockcore.MetricLateCopy), again.Fence)
		}
		mustRelease(t, last, lockcore.Success, "")
	})
}

// Freeing a late copy is the wait's own errand, and bounded by its wait:
// when the store throttles the release (a herd fills the item's write
// capacity), a wait with a maximum wait of 2s still returns by then (the
// copy stays for the environment's next call), not after the release's
// budget (10s).
func TestFreeingALateCopyEndsWithTheWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := lockcore.NewMemoryStore()
		store := newLostFirst(mem)
		env := lockcore.WithHerd(lockcore.Herd{HotKeys: lockcore.NewHotKeys(lockcore.DefaultHotKeys)})
		failWait(t, newLock(t, store, "failed", lockcore.WithLease(6*time.Second), env))
		landed := store.land(t)

		throttled := &hookStore{Store: mem, release: func(context.Context, storeapi.ReleaseRequest) (storeapi.Item, error) {
			return storeapi.Item{}, errThrottle
		}}
		w := newLock(t, throttled, "next", lockcore.WithLease(6*time.Second), lockcore.WithMaxWait(2*time.Second), env)
		res, err := w.TryAcquireElseWaitForRelease(context.Background())
		if res.Outcome != lockcore.Failed || !errors.Is(err, lockcore.ErrWaitTimeout) {
			t.Fatalf("wait = %+v, %v; want FAILED with ErrWaitTimeout", res, err)
		}
		if res.Waited > 2*time.Second+200*time.Millisecond {
			t.Errorf("wait returned after %v, want by its maximum wait (2s): the throttled release of the copy held it", res.Waited)
		}
		if it, _, _ := mem.Get(context.Background(), w.Key()); it.Revision != landed.Revision || it.Released {
			t.Errorf("item = %+v; want the late copy still held (its release was throttled)", it)
		}
	})
}

// The same on DynamoDB's API (Dynoxide, dynalite), in real time: guard D
// lets the second copy through there too, and the next call frees it.
func TestNextCallFreesASecondLateCopyOfAFailedAcquireOnEveryStore(t *testing.T) {
	for _, st := range everyStore() {
		t.Run(st.name, func(t *testing.T) {
			inner := st.new(t)
			store := newLostFirst(inner)
			env := lockcore.WithHerd(lockcore.Herd{HotKeys: lockcore.NewHotKeys(lockcore.DefaultHotKeys)})
			failWait(t, newLock(t, store, "failed", env))
			store.land(t)
			for _, h := range secondCopyHolders {
				l := newLock(t, inner, h.owner, env)
				if res, err := l.TryAcquireElseWaitForRelease(context.Background()); err != nil || res.Outcome != lockcore.Acquired {
					t.Fatalf("%s call = %+v, %v; want ACQUIRED", h.owner, res, err)
				}
				mustRelease(t, l, h.result, "")
			}
			again := store.land(t)

			last := newLock(t, inner, "last", env)
			start := time.Now()
			res, err := last.TryAcquireElseWaitForRelease(context.Background())
			if err != nil || res.Outcome != lockcore.Acquired || res.TookOver || res.Fence <= again.Fence {
				t.Fatalf("last call = %+v, %v; want ACQUIRED above the second copy's fence %d, no take-over", res, err, again.Fence)
			}
			if took := time.Since(start); took >= last.Lease()/2 {
				t.Errorf("last call took %v, want well within the copy's lease (%v)", took, last.Lease())
			}
			mustRelease(t, last, lockcore.Success, "")
		})
	}
}

// A wait whose first attempt was refused over a fresh success returns
// RELEASED at once; a copy of that attempt, refused over that success
// too, can still land once the key has moved on to a released failure,
// and holds the key for nobody: the environment's next call frees it.
func TestNextCallFreesTheLateCopyOfAWaitReleasedAtItsFirstAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := lockcore.NewMemoryStore()
		env := startedEnvironment(t, mem)
		holder := newLock(t, mem, "holder", env)
		mustAcquire(t, holder)
		mustRelease(t, holder, lockcore.Success, "ref")
		store := newLateCopy(mem)
		fresh := newLock(t, store, "fresh", lockcore.WithFreshSuccess(5*time.Second), env)
		if res, err := fresh.TryAcquireElseWaitForRelease(context.Background()); err != nil || res.Outcome != lockcore.Released {
			t.Fatalf("fresh call = %+v, %v; want RELEASED at its first attempt", res, err)
		}
		time.Sleep(6 * time.Second)
		failed := newLock(t, mem, "failing", env)
		mustAcquire(t, failed)
		mustRelease(t, failed, lockcore.Failure, "")
		landed := store.land(t)

		m := &recMetrics{}
		next := newLock(t, mem, "next", lockcore.WithMetrics(m), env)
		res, err := next.TryAcquireElseWaitForRelease(context.Background())
		if err != nil || res.Outcome != lockcore.Acquired {
			t.Fatalf("next call = %+v, %v; want ACQUIRED", res, err)
		}
		if res.TookOver || res.Waited > time.Second || res.Fence <= landed.Fence {
			t.Errorf("next call = %+v; want ACQUIRED above the copy's fence %d within a second, no take-over", res, landed.Fence)
		}
		if got := m.sum(lockcore.MetricLateCopy); got != 1 {
			t.Errorf("LockLateCopy = %v, want 1", got)
		}
		mustRelease(t, next, lockcore.Success, "")
	})
}

// A wait that freed a late copy and then holds a late copy of its own
// next attempt (applied, though answered with a throttle) took over no
// abandoned lease either: the attempt replaced the copy it freed.
func TestHoldingALateCopyOverAFreedCopyIsNoTakeover(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := lockcore.NewMemoryStore()
		store := newLostFirst(mem)
		env := lockcore.WithHerd(lockcore.Herd{HotKeys: lockcore.NewHotKeys(lockcore.DefaultHotKeys)})
		failWait(t, newLock(t, store, "failed", lockcore.WithLease(6*time.Second), env))
		copied := store.land(t)

		applied := &hookStore{Store: mem}
		applied.acquire = func(ctx context.Context, req storeapi.AcquireRequest) (storeapi.Item, error) {
			if applied.n("acquire") != 2 { // the first is refused over the copy; the second races after freeing it
				return mem.Acquire(ctx, req)
			}
			if _, err := mem.Acquire(ctx, req); err != nil {
				t.Errorf("the race after freeing the copy: Acquire() = %v, want it applied", err)
			}
			return storeapi.Item{}, errThrottle // a retry's answer: the first copy got through
		}
		m := &recMetrics{}
		w := newLock(t, applied, "next", lockcore.WithLease(6*time.Second), lockcore.WithMetrics(m), env)
		res, err := w.TryAcquireElseWaitForRelease(context.Background())
		if err != nil || res.Outcome != lockcore.Acquired {
			t.Fatalf("wait = %+v, %v; want ACQUIRED", res, err)
		}
		if it, _, _ := mem.Get(context.Background(), w.Key()); it.PrevRevision != copied.Revision || it.Revision != w.Revision() {
			t.Errorf("item = %+v; want the wait's own attempt, over the copy it freed", it)
		}
		if res.TookOver || w.TookOver() || m.sum(lockcore.MetricTakeover) != 0 {
			t.Errorf("wait = %+v (lock TookOver %v), LockTakeover %v; want no take-over: it replaced the copy it freed",
				res, w.TookOver(), m.sum(lockcore.MetricTakeover))
		}
		mustRelease(t, w, lockcore.Success, "")
	})
}

// A wait's own write whose answer was lost, settled only after its
// validity ran out (the settling reads failed for 1.5s, longer than the
// 0.9s validity of a 1s lease), is freed, and the wait goes on and
// acquires over it: it is told the kind of acquisition that write was,
// over an old success no take-over, as it is when it frees a late copy.
func TestAcquireOverItsOwnSettledWriteIsNoTakeover(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := lockcore.NewMemoryStore()
		env := startedEnvironment(t, mem)
		old := newLock(t, mem, "old", env)
		mustAcquire(t, old)
		mustRelease(t, old, lockcore.Success, "ref")
		time.Sleep(10 * time.Second) // old news

		var unreadable time.Time // until then, reads fail
		store := &hookStore{Store: mem}
		store.acquire = func(ctx context.Context, req storeapi.AcquireRequest) (storeapi.Item, error) {
			if store.n("acquire") != 1 {
				return mem.Acquire(ctx, req)
			}
			if _, err := mem.Acquire(ctx, req); err != nil {
				t.Errorf("first acquire: %v, want it applied", err)
			}
			unreadable = time.Now().Add(1500 * time.Millisecond)
			return storeapi.Item{}, errServer // applied, its answer lost
		}
		store.get = func(ctx context.Context, k lockcore.Key) (storeapi.Item, bool, error) {
			if time.Now().Before(unreadable) {
				return storeapi.Item{}, false, errServer
			}
			return mem.Get(ctx, k)
		}
		m := &recMetrics{}
		w := newLock(t, store, "waiter", lockcore.WithLease(time.Second), lockcore.WithMetrics(m), env)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		res, err := w.TryAcquireElseWaitForRelease(ctx)
		if err != nil || res.Outcome != lockcore.Acquired {
			t.Fatalf("wait = %+v, %v; want ACQUIRED", res, err)
		}
		if n := store.n("release"); n != 1 {
			t.Errorf("releases = %d, want 1: its write freed", n)
		}
		if res.TookOver || w.TookOver() || m.sum(lockcore.MetricTakeover) != 0 {
			t.Errorf("wait = %+v (lock TookOver %v), LockTakeover %v; want no take-over over its own freed write",
				res, w.TookOver(), m.sum(lockcore.MetricTakeover))
		}
		mustRelease(t, w, lockcore.Success, "")
	})
}

// A wait that reads the late copy of an acquire its environment gave up
// on, and whose release of it the store refuses (the role may read the
// table but no longer write it), ends at once with that refusal, as its
// acquire would: store_error matching ErrStoreRefused within a second,
// not a read and a refused release every poll until its maximum wait
// (30s) and then ErrWaitTimeout.
func TestAWaitWhoseFreeingOfALateCopyIsRefusedFailsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := lockcore.NewMemoryStore()
		store := newLostFirst(mem)
		env := lockcore.WithHerd(lockcore.Herd{HotKeys: lockcore.NewHotKeys(lockcore.DefaultHotKeys)})
		failWait(t, newLock(t, store, "failed", lockcore.WithLease(6*time.Second), env))
		store.land(t)

		denied := fmt.Errorf("memory write: refused by the store: AccessDeniedException: %w", lockcore.ErrStoreRefused)
		readOnly := &hookStore{Store: mem,
			acquire: func(context.Context, storeapi.AcquireRequest) (storeapi.Item, error) { return storeapi.Item{}, denied },
			release: func(context.Context, storeapi.ReleaseRequest) (storeapi.Item, error) { return storeapi.Item{}, denied },
		}
		next := newLock(t, readOnly, "next", lockcore.WithLease(6*time.Second), lockcore.WithMaxWait(30*time.Second), env)
		start := time.Now()
		res, err := next.TryAcquireElseWaitForRelease(context.Background())
		took := time.Since(start)
		var ae *lockcore.AcquireError
		if res.Outcome != lockcore.Failed || !errors.As(err, &ae) || ae.Reason != lockcore.ReasonStore || !errors.Is(err, lockcore.ErrStoreRefused) {
			t.Errorf("next call = %v, %v; want FAILED with store_error matching ErrStoreRefused", res.Outcome, err)
		}
		if took > time.Second {
			t.Errorf("next call returned after %v (%d releases refused), want within a second of the refusal", took, readOnly.n("release"))
		}
	})
}
