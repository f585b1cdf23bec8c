package lockcore_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/lockcore/storeapi"
)

func TestReleasePublishesTheResult(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := lockcore.NewMemoryStore()
		l := newLock(t, store, "a")
		mustAcquire(t, l)
		fence, hctx := l.Fence(), l.Context()
		mustRelease(t, l, lockcore.Success, "cache#EUR-USD")
		it, _, _ := store.Get(context.Background(), l.Key())
		if !it.Released || it.Result != lockcore.Success || it.ResultRef != "cache#EUR-USD" || it.ResultFence != fence {
			t.Errorf("item = %+v, want released success, ref cache#EUR-USD, resultFence %d", it, fence)
		}
		if cause := context.Cause(hctx); !errors.Is(cause, lockcore.ErrReleased) {
			t.Errorf("holder context cause = %v, want ErrReleased", cause)
		}
		if err := l.Release(context.Background(), lockcore.Success, ""); err != nil {
			t.Errorf("second Release() = %v, want nil (not held)", err)
		}
		if err := l.Release(context.Background(), "maybe", ""); err == nil {
			t.Error("Release() with an invalid result = nil, want an error")
		}
	})
}

func TestReleaseRetriesWithBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := lockcore.NewMemoryStore()
		fails := 2
		store := &hookStore{Store: mem}
		store.release = func(ctx context.Context, req storeapi.ReleaseRequest) (storeapi.Item, error) {
			if fails > 0 {
				fails--
				return storeapi.Item{}, errInjected
			}
			return mem.Release(ctx, req)
		}
		l := newLock(t, store, "a", lockcore.WithStoreCalls(lockcore.StoreCalls{ReleaseAttempts: 5, ReleaseMaxBackoff: 2 * time.Second}))
		mustAcquire(t, l)
		start := time.Now()
		mustRelease(t, l, lockcore.Success, "")
		// Backoff: 400ms then 800ms, each plus up to 100ms of jitter.
		if got := time.Since(start); got < 1200*time.Millisecond || got > 1400*time.Millisecond {
			t.Errorf("release took %v, want 1.2s to 1.4s", got)
		}
		if store.n("release") != 3 {
			t.Errorf("release attempts = %d, want 3", store.n("release"))
		}
	})
}

func TestReleaseGivesUpWithinItsBudget(t *testing.T) {
	tests := []struct {
		name         string
		ctxTimeout   time.Duration // 0: no deadline
		opts         []lockcore.Option
		wantAttempts int
		wantWithin   time.Duration
	}{
		{"all attempts", 0, nil, 5, 5200 * time.Millisecond}, // 0.4+0.8+1.6+2s, each +≤100ms
		{"bounded by the context's deadline", 1500 * time.Millisecond, nil, 3, 1500 * time.Millisecond},
		{"bounded by the release timeout", 0, []lockcore.Option{lockcore.WithStoreCalls(lockcore.StoreCalls{ReleaseTimeout: 1500 * time.Millisecond})}, 3, 1500 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				store := &hookStore{Store: lockcore.NewMemoryStore(), release: failRelease}
				l := newLock(t, store, "a", tt.opts...)
				mustAcquire(t, l)
				ctx := context.Background()
				if tt.ctxTimeout > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, tt.ctxTimeout)
					defer cancel()
				}
				start := time.Now()
				err := l.Release(ctx, lockcore.Success, "")
				if !errors.Is(err, lockcore.ErrReleaseFailed) || !errors.Is(err, errInjected) {
					t.Errorf("Release() = %v, want ErrReleaseFailed wrapping the store error", err)
				}
				if store.n("release") != tt.wantAttempts {
					t.Errorf("attempts = %d, want %d", store.n("release"), tt.wantAttempts)
				}
				if got := time.Since(start); got > tt.wantWithin {
					t.Errorf("release took %v, want at most %v", got, tt.wantWithin)
				}
				if l.HasLock() {
					t.Error("HasLock() after a failed release = true, want false")
				}
			})
		})
	}
}

func TestReleaseAfterTheLockEndedItselfSaysSoOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &hookStore{Store: lockcore.NewMemoryStore(), renew: failRenew}
		l := newLock(t, store, "a", lockcore.WithLease(2*time.Second))
		mustAcquire(t, l)
		<-l.Context().Done()
		synctest.Wait() // the keeper has released as a failure
		err := l.Release(context.Background(), lockcore.Success, "data")
		if !errors.Is(err, lockcore.ErrLeaseLost) {
			t.Errorf("Release() after the lease ran out = %v, want ErrLeaseLost: success was not published", err)
		}
		if err := l.Release(context.Background(), lockcore.Success, "data"); err != nil {
			t.Errorf("second Release() = %v, want nil", err)
		}
		it, _, _ := store.Get(context.Background(), l.Key())
		if it.Result != lockcore.Failure {
			t.Errorf("published result = %q, want failure", it.Result)
		}
	})
}

func TestReleaseAfterTakeOverPublishesNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := lockcore.NewMemoryStore()
		l := newLock(t, store, "a")
		mustAcquire(t, l)
		l.CancelAutoRenewal()
		it, _, _ := store.Get(context.Background(), l.Key())
		if _, err := store.Acquire(context.Background(), storeapi.AcquireRequest{Key: l.Key(), Revision: "next",
			Lease: time.Second, Observed: &storeapi.Observation{Revision: it.Revision, Beat: it.Beat}}); err != nil {
			t.Fatal(err)
		}
		err := l.Release(context.Background(), lockcore.Success, "mine")
		if !errors.Is(err, lockcore.ErrLeaseLost) {
			t.Errorf("Release() = %v, want ErrLeaseLost", err)
		}
		got, _, _ := store.Get(context.Background(), l.Key())
		if got.Released || got.ResultRef != "" || got.Revision != "next" {
			t.Errorf("item = %+v, want the successor's hold untouched", got)
		}
	})
}

func TestReleaseRetryAfterLostResponse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := lockcore.NewMemoryStore()
		first := true
		store := &hookStore{Store: mem}
		// The first release is applied but its response is lost.
		store.release = func(ctx context.Context, req storeapi.ReleaseRequest) (storeapi.Item, error) {
			it, err := mem.Release(ctx, req)
			if first {
				first = false
				return storeapi.Item{}, errInjected
			}
			return it, err
		}
		l := newLock(t, store, "a")
		mustAcquire(t, l)
		if err := l.Release(context.Background(), lockcore.Success, "ref"); err != nil {
			t.Fatalf("Release() = %v, want nil: the retry finds its own release", err)
		}
		if store.n("release") != 2 {
			t.Errorf("release attempts = %d, want 2", store.n("release"))
		}
	})
}
