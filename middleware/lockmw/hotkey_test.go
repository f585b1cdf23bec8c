package lockmw_test

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/lockcore/storeapi"
	"github.com/herdlock/herdlock/middleware/lockmw"
)

// hotCounter counts a MemoryStore's acquires and reads. It embeds the
// store, so the Locks on it share the store's memory of hot keys.
type hotCounter struct {
	*lockcore.MemoryStore
	acquires, gets atomic.Int32
}

func (s *hotCounter) Acquire(ctx context.Context, req storeapi.AcquireRequest) (storeapi.Item, error) {
	s.acquires.Add(1)
	return s.MemoryStore.Acquire(ctx, req)
}

func (s *hotCounter) Get(ctx context.Context, key lockcore.Key) (storeapi.Item, bool, error) {
	s.gets.Add(1)
	return s.MemoryStore.Get(ctx, key)
}

// At the defaults, an execution environment whose invocation found the key
// held serves its next invocation of that key with one read, not a write:
// the store remembers the hot key.
func TestDefaultHotKeyReadsFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &hotCounter{MemoryStore: lockcore.NewMemoryStore()}
		holder := lockmw.Wrap(func(ctx context.Context, e event) (rate, error) {
			time.Sleep(time.Second)
			return fetchRate(ctx, e)
		}, store, keyOf, options()...)
		other := lockmw.Wrap(fetchRate, store, keyOf, options()...) // another execution environment on the same store
		invoke := func(h func(context.Context, event) (rate, error), id string) {
			ctx, cancel := invocationContext(t.Context(), time.Minute, id)
			defer cancel()
			if _, err := h(ctx, event{Key: "k"}); err != nil {
				t.Errorf("invocation %s: %v", id, err)
			}
		}
		done := make(chan struct{})
		go func() { defer close(done); invoke(holder, "holder") }()
		time.Sleep(100 * time.Millisecond)
		invoke(other, "waiter") // its write is refused: the key is hot
		<-done
		store.acquires.Store(0)
		store.gets.Store(0)
		invoke(other, "late")
		if a, g := store.acquires.Load(), store.gets.Load(); a != 0 || g != 1 {
			t.Errorf("the late invocation made %d acquires and %d reads, want 0 and 1", a, g)
		}
	})
}
