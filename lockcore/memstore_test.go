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
	"github.com/herdlock/herdlock/lockcore/storetest"
)

func TestMemoryStoreAcquireRelease(t *testing.T) {
	ctx := context.Background()
	s := lockcore.NewMemoryStore()
	key := lockcore.Key{Group: "g", ID: "id"}
	req := storeapi.AcquireRequest{Key: key, Holder: "o", Revision: "r1", Lease: time.Second,
		NowMs: 1000, LeaseUntilMs: 2000, ExpiresAtMs: 5000, FenceBase: 41}
	it, err := s.Acquire(ctx, req)
	if err != nil || it.Fence != 42 || it.Revision != "r1" {
		t.Fatalf("Acquire() = %+v, %v, want fence 42 revision r1", it, err)
	}
	req2 := req
	req2.Revision = "r2"
	_, err = s.Acquire(ctx, req2)
	var ce *storeapi.ConditionError
	if !errors.As(err, &ce) || ce.Current == nil || ce.Current.Revision != "r1" {
		t.Fatalf("second Acquire() error = %v, want ConditionError at r1", err)
	}
	if _, err := s.Release(ctx, storeapi.ReleaseRequest{Key: key, Revision: "r1", Result: lockcore.Success}); err != nil {
		t.Fatalf("Release() = %v", err)
	}
	it, err = s.Acquire(ctx, req2)
	if err != nil || it.Fence != 43 || it.Released || it.Result != "" {
		t.Fatalf("Acquire() after release = %+v, %v, want fence 43, not released, no result", it, err)
	}
}

func TestMemoryStoreRejectsDoneContextAndEmptyRevision(t *testing.T) {
	s := lockcore.NewMemoryStore()
	key := lockcore.Key{Group: "g", ID: "id"}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Acquire(ctx, storeapi.AcquireRequest{Key: key, Revision: "r"}); !errors.Is(err, context.Canceled) {
		t.Errorf("Acquire(cancelled ctx) = %v, want context.Canceled", err)
	}
	if _, _, err := s.Get(ctx, key); !errors.Is(err, context.Canceled) {
		t.Errorf("Get(cancelled ctx) = %v, want context.Canceled", err)
	}
	if _, err := s.Acquire(context.Background(), storeapi.AcquireRequest{Key: key}); err == nil {
		t.Errorf("Acquire(empty revision) = nil error, want error")
	}
	if _, err := s.Release(context.Background(), storeapi.ReleaseRequest{Key: key, Revision: "r", Result: "maybe"}); err == nil {
		t.Errorf("Release(invalid result) = nil error, want error")
	}
}

// TestMemoryStoreInSynctestBubble shows that MemoryStore neither blocks a
// bubble nor leaks goroutines: synctest.Test fails if any goroutine it
// started is still running or durably blocked at the end.
func TestMemoryStoreInSynctestBubble(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := lockcore.NewMemoryStore()
		key := lockcore.Key{Group: "g", ID: "bubble"}
		var wg sync.WaitGroup
		wins := make(chan string, 8)
		for i := range 8 {
			wg.Go(func() {
				rev := string(rune('a' + i))
				if _, err := s.Acquire(t.Context(), storeapi.AcquireRequest{Key: key, Revision: rev}); err == nil {
					wins <- rev
				}
			})
		}
		wg.Wait()
		close(wins)
		n := 0
		for range wins {
			n++
		}
		if n != 1 {
			t.Fatalf("winners = %d, want 1", n)
		}
		time.Sleep(time.Hour) // fake time: returns at once inside the bubble
		if _, found, err := s.Get(t.Context(), key); err != nil || !found {
			t.Fatalf("Get() = %v, %v, want found", found, err)
		}
	})
}

func TestMemoryStoreConformance(t *testing.T) {
	storetest.Run(t, func(*testing.T) storeapi.Store { return lockcore.NewMemoryStore() })
}
