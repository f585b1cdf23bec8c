package lockcore_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/lockcore/storeapi"
)

// lateRelease is a MemoryStore whose releases reach it d after they are
// sent, whatever the caller's context says, while blocked is set.
type lateRelease struct {
	*lockcore.MemoryStore
	d       time.Duration
	blocked atomic.Bool
}

func (s *lateRelease) Release(ctx context.Context, req storeapi.ReleaseRequest) (storeapi.Item, error) {
	if s.blocked.Load() {
		time.Sleep(s.d)
	}
	it, err := s.MemoryStore.Release(context.WithoutCancel(ctx), req)
	if ctx.Err() != nil {
		return storeapi.Item{}, ctx.Err()
	}
	return it, err
}

// A holder's release with a budget longer than its lease (as lockmw's is
// now) whose attempts reach the store after the lease ran out and a
// newcomer took the lock is refused: the holder is told it lost the
// lease, and the newcomer's hold is left as it is.
func TestLongReleaseAfterTheLeaseIsFenced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &lateRelease{MemoryStore: lockcore.NewMemoryStore(), d: 15 * time.Second}
		calls := lockcore.StoreCalls{ReleaseTimeout: 20 * time.Second}
		a := newLock(t, store, "a", lockcore.WithStoreCalls(calls))
		mustAcquire(t, a)
		store.blocked.Store(true)
		errc := make(chan error, 1)
		go func() { errc <- a.Release(context.Background(), lockcore.Success, "a's") }()
		time.Sleep(lockcore.DefaultLease + 3*time.Second) // a's lease has run out, its release not landed
		b := newLock(t, store, "b")
		store.blocked.Store(false)
		mustAcquire(t, b)
		err := <-errc
		if !errors.Is(err, lockcore.ErrLeaseLost) {
			t.Errorf("a's late Release() = %v; want ErrLeaseLost", err)
		}
		if err := b.Renew(context.Background()); err != nil {
			t.Errorf("b.Renew() after a's late release = %v; want nil: b still holds", err)
		}
		mustRelease(t, b, lockcore.Success, "b's")
		time.Sleep(store.d) // a's attempts that were not answered reach the store
		synctest.Wait()
	})
}
