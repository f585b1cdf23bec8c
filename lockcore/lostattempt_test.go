package lockcore_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/herdlock/herdlock/lockcore"
)

var errServer = errors.New("lockcore: dynamodb acquire: InternalServerError: status code: 500")

// newLostFirst returns a late-copy store over inner whose first acquire is
// answered with a server error (a 5xx) and not applied, while a copy of it
// is still on its way: the test lands that copy later with land.
func newLostFirst(inner lockcore.Store) *lateCopy {
	s := newLateCopy(inner)
	s.acquire = func(ctx context.Context, req lockcore.AcquireRequest) (lockcore.Item, error) {
		s.mu.Lock()
		first := s.first == nil
		if first {
			r := req
			s.first = &r
		}
		s.mu.Unlock()
		if first {
			close(s.refused)
			return lockcore.Item{}, errServer
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
// call held the key and published.
func TestNextCallFreesTheLateCopyOfAFailedAcquire(t *testing.T) {
	tests := []struct {
		name    string
		fail    failFirstStep
		between func(t *testing.T, s lockcore.Store, env lockcore.Option) // before the copy lands; nil: nothing
	}{
		{"wait's first step", failWait, nil},
		{"Acquire", failAcquire, nil},
		{"wait's first step, the copy landing after another call published", failWait, publishSuccess},
		{"Acquire, the copy landing after another call published", failAcquire, publishSuccess},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				mem := lockcore.NewMemoryStore()
				store := newLostFirst(mem)
				env := lockcore.WithHotKeys(lockcore.NewHotKeys(lockcore.DefaultHotKeys)) // the environment's memory, as its store's
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
func publishSuccess(t *testing.T, s lockcore.Store, env lockcore.Option) {
	t.Helper()
	other := newLock(t, s, "other", env)
	if res, err := other.TryAcquireElseWaitForRelease(context.Background()); err != nil || res.Outcome != lockcore.Acquired {
		t.Fatalf("other call = %+v, %v; want ACQUIRED", res, err)
	}
	time.Sleep(time.Second)
	mustRelease(t, other, lockcore.Success, "ref")
}

// A Lock on another store (another execution environment) does not know
// the revision: the late copy is, for it, a holder that stopped, taken
// over after a lease as before. Only the environment that gave the
// acquire up frees it.
func TestALateCopyIsFreedOnlyByItsOwnEnvironment(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := lockcore.NewMemoryStore()
		store := newLostFirst(mem)
		failWait(t, newLock(t, store, "failed", lockcore.WithLease(6*time.Second), lockcore.WithHotKeys(lockcore.NewHotKeys(lockcore.DefaultHotKeys))))
		store.land(t)

		elsewhere := &hookStore{Store: mem}
		other, err := lockcore.New(elsewhere, params("elsewhere"), lockcore.WithLogger(quiet), lockcore.WithLease(6*time.Second),
			lockcore.WithHotKeys(lockcore.NewHotKeys(lockcore.DefaultHotKeys)))
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
			env := lockcore.WithHotKeys(lockcore.NewHotKeys(lockcore.DefaultHotKeys))
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
func startedEnvironment(t *testing.T, s lockcore.Store) lockcore.Option {
	t.Helper()
	env := lockcore.WithHotKeys(lockcore.NewHotKeys(lockcore.DefaultHotKeys))
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
