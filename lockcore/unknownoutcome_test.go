package lockcore_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/lockcore/storeapi"
)

// An acquire applied but answered with an error of unknown outcome (a 5xx
// whose retry was throttled, as DynamoStore reports it), on an item whose
// reads the herd keeps throttled for a while: the settling read is retried
// until it is served, and the invocation recognises its own write
// (ACQUIRED), instead of freeing it and failing, or waiting on it.
func TestUnknownOutcomeSettledThroughThrottledReads(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := lockcore.NewMemoryStore()
		var throttledGets atomic.Int32
		store := &hookStore{Store: mem}
		store.acquire = func(ctx context.Context, r storeapi.AcquireRequest) (storeapi.Item, error) {
			if _, err := mem.Acquire(ctx, r); err != nil {
				return storeapi.Item{}, err
			}
			return storeapi.Item{}, errors.New("lockcore: dynamodb acquire: outcome unknown: InternalServerError; the retry was throttled")
		}
		served := time.Now().Add(1500 * time.Millisecond)
		store.get = func(ctx context.Context, k lockcore.Key) (storeapi.Item, bool, error) {
			if time.Now().Before(served) {
				throttledGets.Add(1)
				return storeapi.Item{}, false, fmt.Errorf("lockcore: dynamodb get: %w", lockcore.ErrThrottled)
			}
			return mem.Get(ctx, k)
		}
		l := newLock(t, store, "holder")
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		res, err := l.TryAcquireElseWaitForRelease(ctx)
		if res.Outcome != lockcore.Acquired || err != nil {
			t.Fatalf("TryAcquireElseWaitForRelease() = %v, %v, want ACQUIRED (our own write)", res.Outcome, err)
		}
		if throttledGets.Load() < 2 {
			t.Errorf("throttled settling reads = %d, want several before one is served", throttledGets.Load())
		}
		if store.n("release") != 0 || !l.Valid() {
			t.Errorf("releases = %d, Valid %v; want our write held, not freed", store.n("release"), l.Valid())
		}
		mustRelease(t, l, lockcore.Success, "")
	})
}

// lostFirstAcquire is a store whose first Acquire is lost on its way: the
// server never applies it, and the client gives up with a timeout.
type lostFirstAcquire struct {
	*lockcore.MemoryStore
	lost atomic.Bool
}

func (s *lostFirstAcquire) Acquire(ctx context.Context, r storeapi.AcquireRequest) (storeapi.Item, error) {
	if s.lost.CompareAndSwap(false, true) {
		return storeapi.Item{}, clientTimeout{}
	}
	return s.MemoryStore.Acquire(ctx, r)
}

// A wait whose first acquire got no answer settles it with a read; when
// that read shows the lock released with a success long past (older than
// the fresh-success window and the clock allowance), the lock is free and
// the success is old news: the wait acquires, it is not told RELEASED
// with that success.
func TestUnknownOutcomeOverOldSuccessAcquires(t *testing.T) {
	tests := []struct {
		name string
		opts []lockcore.Option
	}{
		{"no fresh-success window", nil},
		{"a fresh-success window of 2.5 s", []lockcore.Option{lockcore.WithFreshSuccess(2500 * time.Millisecond)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				mem := lockcore.NewMemoryStore()
				old := newLock(t, mem, "old holder")
				mustAcquire(t, old)
				mustRelease(t, old, lockcore.Success, "old ref")
				time.Sleep(7 * time.Second) // the success is long past
				store := &lostFirstAcquire{MemoryStore: mem}
				l := newLock(t, store, "waiter", tt.opts...)
				res, err := l.TryAcquireElseWaitForRelease(context.Background())
				if res.Outcome != lockcore.Acquired || err != nil {
					t.Errorf("TryAcquireElseWaitForRelease() = %v (result ref %q), %v; want ACQUIRED over the old success", res.Outcome, res.ResultRef, err)
				}
				if res.Outcome == lockcore.Acquired {
					mustRelease(t, l, lockcore.Success, "new ref")
				}
			})
		})
	}
}

// raceToSuccess is a store on which another invocation acquires and
// publishes success just before the watched owner's take-over write
// arrives, and which counts the owner's reads after that write.
type raceToSuccess struct {
	*lockcore.MemoryStore
	t          *testing.T
	owner      string
	raced      atomic.Bool
	readsAfter atomic.Int64
}

func (s *raceToSuccess) Acquire(ctx context.Context, r storeapi.AcquireRequest) (storeapi.Item, error) {
	if r.Holder == s.owner && !s.raced.Load() {
		if it, found, _ := s.MemoryStore.Get(ctx, r.Key); found && it.Released && s.raced.CompareAndSwap(false, true) {
			other := newLock(s.t, s.MemoryStore, "other invocation")
			mustAcquire(s.t, other)
			mustRelease(s.t, other, lockcore.Success, "other ref")
		}
	}
	return s.MemoryStore.Acquire(ctx, r)
}

func (s *raceToSuccess) Get(ctx context.Context, k lockcore.Key) (storeapi.Item, bool, error) {
	if s.raced.Load() {
		s.readsAfter.Add(1)
	}
	return s.MemoryStore.Get(ctx, k)
}

// A waiter whose take-over write (after its holder failed) is refused over
// a success another invocation published meanwhile has its answer in the
// refusal: it returns RELEASED with that success at once, without another
// read (in a brownout, that read's answer can come after the deadline,
// and the wait ended FAILED with ErrWaitTimeout over the success).
func TestRefusedTakeoverOverPublishedSuccessIsReleased(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := lockcore.NewMemoryStore()
		fresh := lockcore.WithFreshSuccess(2500 * time.Millisecond)
		holder := newLock(t, mem, "holder", fresh)
		mustAcquire(t, holder)
		store := &raceToSuccess{MemoryStore: mem, t: t}
		waiter := newLock(t, store, "waiter", fresh)
		store.owner = waiter.HolderName()
		done := make(chan struct{})
		var res lockcore.WaitResult
		var err error
		go func() {
			defer close(done)
			res, err = waiter.TryAcquireElseWaitForRelease(context.Background())
		}()
		time.Sleep(300 * time.Millisecond)
		mustRelease(t, holder, lockcore.Failure, "")
		<-done
		if !store.raced.Load() {
			t.Fatal("the waiter sent no take-over write over the failure")
		}
		if res.Outcome != lockcore.Released || res.ResultRef != "other ref" || err != nil {
			t.Errorf("TryAcquireElseWaitForRelease() = %v (ref %q), %v; want RELEASED with the other invocation's success", res.Outcome, res.ResultRef, err)
		}
		if n := store.readsAfter.Load(); n != 0 {
			t.Errorf("the waiter read the item %d times after its refused take-over; want 0", n)
		}
	})
}
