package lockcore_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/lockcore/storeapi"
)

// unfreeable is a waiter's MemoryStore whose lock-item reads are
// throttled while closed (a herd past the item's read capacity) and whose
// releases of writes nobody held (the freeing of a late copy) are
// throttled too, as a herd that fills the item's write capacity throttles
// them; onFree runs at the first such release.
type unfreeable struct {
	*lockcore.MemoryStore
	mu     sync.Mutex
	closed bool
	onFree func()
	frees  int
}

func (s *unfreeable) setClosed(c bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = c
}

func (s *unfreeable) Get(ctx context.Context, k lockcore.Key) (storeapi.Item, bool, error) {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return storeapi.Item{}, false, fmt.Errorf("test: lock item over its read capacity: %w", lockcore.ErrThrottled)
	}
	return s.MemoryStore.Get(ctx, k)
}

func (s *unfreeable) Release(ctx context.Context, req storeapi.ReleaseRequest) (storeapi.Item, error) {
	if !req.Unheld {
		return s.MemoryStore.Release(ctx, req)
	}
	s.mu.Lock()
	s.frees++
	first, onFree := s.frees == 1, s.onFree
	s.mu.Unlock()
	if first && onFree != nil {
		onFree()
	}
	return storeapi.Item{}, fmt.Errorf("test: lock item over its write capacity: %w", lockcore.ErrThrottled)
}

// A crowded waiter whose answer is announced is not kept from it by a
// write that held the key for nobody. The waiter saw the fetcher holding;
// the fetcher published its success, which another waiter relayed to
// every shard; a late copy of a plain Acquire that its execution
// environment gave up on (refused over the fetcher) landed over the
// success. The waiter reads the copy, knows it for nobody's, and cannot
// free it (the herd fills the item's write capacity). The fetcher's
// success is still its answer (the fence it saw holding, published during
// the wait), and its shard shows it: it must return RELEASED with it, not
// refuse it as older than the copy's fence and read the copy until its
// maximum wait, ErrWaitTimeout over a published success.
func TestACopyHeldByNobodyDoesNotHideTheAnnouncedSuccess(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := lockcore.NewMemoryStore()
		env := lockcore.WithHerd(lockcore.Herd{HotKeys: lockcore.NewHotKeys(lockcore.DefaultHotKeys)})
		fetcher := newLock(t, mem, "fetcher", env)
		mustAcquire(t, fetcher)
		fence := fetcher.Fence()
		copied := newLateCopy(mem)
		if ok, err := newLock(t, copied, "tried", env).Acquire(context.Background()); ok || err != nil {
			t.Fatalf("Acquire() over the fetcher = %v, %v; want false, nil", ok, err)
		}
		key := lockcore.Key{Group: "fx", ID: "EUR-USD"}
		s := &unfreeable{MemoryStore: mem}
		s.onFree = func() { // another waiter read the success before the copy landed, and relayed it
			for shard := range lockcore.DefaultAnnounceShards {
				if _, err := mem.Announce(context.Background(), storeapi.Announcement{Key: key, Shard: shard, Fence: fence,
					ResultRef: "ref", ReleasedAtMs: time.Now().UnixMilli() - 100}); err != nil {
					t.Error(err)
				}
			}
		}
		w := startWaiting(newLock(t, s, "waiter", env, lockcore.WithMaxWait(10*time.Second),
			lockcore.WithStoreCalls(lockcore.StoreCalls{ReleaseTimeout: time.Second})))
		synctest.Wait() // waiting on the fetcher, seen holding
		s.setClosed(true)
		time.Sleep(2 * time.Second) // throttled: the wait is crowded
		mustRelease(t, fetcher, lockcore.Success, "ref")
		copied.land(t)
		s.setClosed(false)
		got := <-w.done
		if got.err != nil || got.res.Outcome != lockcore.Released || got.res.Fence != fence || got.res.ResultRef != "ref" {
			t.Fatalf("waiter = %+v, %v; want RELEASED with the fetcher's success (fence %d)", got.res, got.err, fence)
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.frees == 0 {
			t.Errorf("the waiter never tried to free the copy; the test proves nothing")
		}
	})
}
