package lockcore_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/lockcore/storeapi"
)

// lateCopy is a waiter's store whose first acquire is refused while an
// earlier copy of the same request is still on its way: the test lands
// that copy later with land.
type lateCopy struct {
	hookStore
	mu      sync.Mutex
	first   *storeapi.AcquireRequest
	refused chan struct{} // closed when the first acquire has returned
}

func newLateCopy(inner storeapi.Store) *lateCopy {
	s := &lateCopy{hookStore: hookStore{Store: inner}, refused: make(chan struct{})}
	s.acquire = func(ctx context.Context, req storeapi.AcquireRequest) (storeapi.Item, error) {
		s.mu.Lock()
		first := s.first == nil
		if first {
			r := req
			s.first = &r
		}
		s.mu.Unlock()
		it, err := inner.Acquire(ctx, req)
		if first {
			close(s.refused)
		}
		return it, err
	}
	return s
}

// heldWithLateCopy acquires the lock on inner for a holder (lease 6s) and
// returns it with a waiter's late-copy store over inner.
func heldWithLateCopy(t *testing.T, inner storeapi.Store) (*lockcore.Lock, *lateCopy) {
	t.Helper()
	holder := newLock(t, inner, "holder", lockcore.WithLease(6*time.Second))
	mustAcquire(t, holder)
	return holder, newLateCopy(inner)
}

// land applies the first acquire's late copy to the inner store.
func (s *lateCopy) land(t *testing.T) storeapi.Item {
	t.Helper()
	s.mu.Lock()
	req := s.first
	s.mu.Unlock()
	if req == nil {
		t.Fatal("the waiter sent no acquire")
	}
	it, err := s.Store.Acquire(context.Background(), *req)
	if err != nil {
		t.Fatalf("late copy: Acquire() = %v, want it applied on the released lock", err)
	}
	return it
}

// forceRelease releases the holder's revision as an operator does.
func forceRelease(t *testing.T, s storeapi.Store, key lockcore.Key) {
	t.Helper()
	it, _, err := s.Get(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Release(context.Background(), storeapi.ReleaseRequest{
		Key: key, Revision: it.Revision, NowMs: time.Now().UnixMilli(), Result: lockcore.Failure,
		Failures: it.Failures, FailReason: storeapi.OperatorReleaseReason,
	})
	if err != nil {
		t.Fatalf("operator Release() = %v", err)
	}
}

type waitOutcome struct {
	res lockcore.WaitResult
	err error
	at  time.Duration
}

func waitInBackground(l *lockcore.Lock) <-chan waitOutcome {
	done := make(chan waitOutcome, 1)
	start := time.Now()
	go func() {
		res, err := l.TryAcquireElseWaitForRelease(context.Background())
		done <- waitOutcome{res, err, time.Since(start)}
	}()
	return done
}

// A late copy of a waiter's own refused acquire that lands on a lock the
// operator released holds the key for that waiter: its next read sees its
// own revision and returns ACQUIRED with that fence, within one poll,
// instead of watching a holder that will never renew for a whole lease and
// taking it over (the key held by nobody meanwhile).
func TestWaitHoldsTheLateCopyOfItsOwnAcquire(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := lockcore.NewMemoryStore()
		holder, store := heldWithLateCopy(t, mem)
		m := &recMetrics{}
		w := newLock(t, store, "waiter", lockcore.WithLease(6*time.Second), lockcore.WithMaxWait(30*time.Second), lockcore.WithMetrics(m))
		done := waitInBackground(w)
		synctest.Wait() // refused over the holder: waiting

		time.Sleep(50 * time.Millisecond)
		forceRelease(t, mem, holder.Key())
		landed := store.land(t)

		got := <-done
		if got.err != nil || got.res.Outcome != lockcore.Acquired {
			t.Fatalf("wait = %v, %v, want ACQUIRED", got.res.Outcome, got.err)
		}
		if got.res.Fence != landed.Fence || w.Revision() != landed.Revision || got.res.TookOver {
			t.Errorf("wait = fence %d, revision %q, took over %v; want the late copy's fence %d and revision %q, no take-over",
				got.res.Fence, w.Revision(), got.res.TookOver, landed.Fence, landed.Revision)
		}
		if got.at > time.Second {
			t.Errorf("returned %v after the wait began, want within a poll of the copy landing (a take-over waits a lease)", got.at)
		}
		if n := store.n("acquire"); n != 1 {
			t.Errorf("acquire writes = %d, want 1: the late copy is the hold", n)
		}
		if !w.Valid() {
			t.Error("the waiter's hold is not valid")
		}
		if got := m.sum(lockcore.MetricLateCopy); got != 1 {
			t.Errorf("LockLateCopy = %v, want 1", got)
		}
		if err := w.Release(context.Background(), lockcore.Success, "ref"); err != nil {
			t.Fatalf("Release() = %v", err)
		}
		if it, _, _ := mem.Get(context.Background(), w.Key()); !it.Released || it.Result != lockcore.Success || it.ResultFence != landed.Fence {
			t.Errorf("item after release = %+v, want our success at fence %d", it, landed.Fence)
		}
		_ = holder.Release(context.Background(), lockcore.Failure, "") // stops its keeper; force-released, it publishes nothing
	})
}

// A late copy that the waiter reads after its validity (a lease from when
// it was sent) has run out is not held: the waiter frees it with a release
// conditioned on that revision and acquires the lock anew, so the hold it
// returns is valid and carries a new fence; it took over no abandoned
// lease, since it freed the copy itself.
func TestWaitFreesALateCopyItMayNoLongerHold(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := lockcore.NewMemoryStore()
		holder, store := heldWithLateCopy(t, mem)
		w := newLock(t, store, "waiter", lockcore.WithLease(time.Second), lockcore.WithMaxWait(30*time.Second))
		done := waitInBackground(w)
		synctest.Wait()

		time.Sleep(3 * time.Second) // past the waiter's lease
		forceRelease(t, mem, holder.Key())
		landed := store.land(t)

		got := <-done
		if got.err != nil || got.res.Outcome != lockcore.Acquired {
			t.Fatalf("wait = %v, %v, want ACQUIRED", got.res.Outcome, got.err)
		}
		if !w.Valid() || w.Revision() == landed.Revision || got.res.Fence <= landed.Fence {
			t.Errorf("hold: valid %v, revision %q (late copy %q), fence %d (late copy %d): want a valid new hold above the copy",
				w.Valid(), w.Revision(), landed.Revision, got.res.Fence, landed.Fence)
		}
		if n := store.n("release"); n != 1 {
			t.Errorf("releases by the waiter = %d, want 1: the late copy freed", n)
		}
		if got.res.TookOver || w.TookOver() {
			t.Errorf("wait took over (result %v, lock %v), want no take-over over the copy it freed", got.res.TookOver, w.TookOver())
		}
		mustRelease(t, w, lockcore.Success, "")
		_ = holder.Release(context.Background(), lockcore.Failure, "") // stops its keeper; force-released, it publishes nothing
	})
}

// The same on DynamoDB's API (Dynoxide, dynalite) as on the memory store,
// in real time: the late copy lands through the store's real condition
// (guard D lets it pass: the item carries the holder's revision), and the
// waiter holds it.
func TestWaitHoldsTheLateCopyOfItsOwnAcquireOnEveryStore(t *testing.T) {
	for _, st := range everyStore() {
		t.Run(st.name, func(t *testing.T) {
			inner := st.new(t)
			holder, store := heldWithLateCopy(t, inner)
			w := newLock(t, store, "waiter", lockcore.WithMaxWait(20*time.Second))
			done := waitInBackground(w)
			<-store.refused
			forceRelease(t, inner, holder.Key())
			landed := store.land(t)

			got := <-done
			if got.err != nil || got.res.Outcome != lockcore.Acquired || got.res.Fence != landed.Fence || got.res.TookOver {
				t.Fatalf("wait = %+v, %v; want ACQUIRED at the late copy's fence %d, no take-over", got.res, got.err, landed.Fence)
			}
			if got.at >= w.Lease() {
				t.Errorf("returned %v after the wait began, want well within a lease (%v): a take-over waits longer", got.at, w.Lease())
			}
			if n := store.n("acquire"); n != 1 {
				t.Errorf("acquire writes = %d, want 1", n)
			}
			mustRelease(t, w, lockcore.Success, "ref")
			_ = holder.Release(context.Background(), lockcore.Failure, "") // stops its keeper
		})
	}
}

// A late copy that lands just before the waiter's next attempt refuses that
// attempt: the refused write returns the late copy's item, and the waiter
// holds it at once.
func TestWaitHoldsTheLateCopyItsNextAttemptMeets(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := lockcore.NewMemoryStore()
		holder, store := heldWithLateCopy(t, mem)
		var landed storeapi.Item
		first := store.acquire
		store.acquire = func(ctx context.Context, req storeapi.AcquireRequest) (storeapi.Item, error) {
			if store.n("acquire") == 2 { // the race after the release: the late copy lands first
				landed = store.land(t)
			}
			return first(ctx, req)
		}
		m := &recMetrics{}
		w := newLock(t, store, "waiter", lockcore.WithLease(6*time.Second), lockcore.WithMaxWait(30*time.Second), lockcore.WithMetrics(m))
		done := waitInBackground(w)
		synctest.Wait()
		forceRelease(t, mem, holder.Key())

		got := <-done
		if got.err != nil || got.res.Outcome != lockcore.Acquired || got.res.Fence != landed.Fence || w.Revision() != landed.Revision {
			t.Fatalf("wait = %+v, %v (revision %q); want ACQUIRED at the late copy's fence %d, revision %q",
				got.res, got.err, w.Revision(), landed.Fence, landed.Revision)
		}
		if n := store.n("acquire"); n != 2 || m.sum(lockcore.MetricLateCopy) != 1 {
			t.Errorf("acquire writes = %d, LockLateCopy = %v; want 2 and 1", n, m.sum(lockcore.MetricLateCopy))
		}
		if got.res.Polls != 1 {
			t.Errorf("polls = %d, want 1 (the read that saw the release): the refused write already showed the late copy", got.res.Polls)
		}
		mustRelease(t, w, lockcore.Success, "ref")
		_ = holder.Release(context.Background(), lockcore.Failure, "")
	})
}
