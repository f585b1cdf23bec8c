package lockcore_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/herdlock/herdlock/lockcore"
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
		store.release = func(ctx context.Context, req lockcore.ReleaseRequest) (lockcore.Item, error) {
			if fails > 0 {
				fails--
				return lockcore.Item{}, errInjected
			}
			return mem.Release(ctx, req)
		}
		l := newLock(t, store, "a", lockcore.WithReleaseRetries(5, 2*time.Second))
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

func TestReleaseGivesUpWithinTheInvocation(t *testing.T) {
	tests := []struct {
		name         string
		remaining    time.Duration
		wantAttempts int
	}{
		{"all attempts", time.Minute, 5},
		{"bounded by remaining time", 1500 * time.Millisecond, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				mem := lockcore.NewMemoryStore()
				store := &hookStore{Store: mem, release: failRelease}
				p := params("a")
				end := time.Now().Add(tt.remaining)
				p.RemainingTime = func() time.Duration { return time.Until(end) }
				l, err := lockcore.New(store, p, lockcore.WithLogger(quiet), lockcore.WithMaxHold(time.Hour))
				if err != nil {
					t.Fatal(err)
				}
				mustAcquire(t, l)
				err = l.Release(context.Background(), lockcore.Success, "")
				if !errors.Is(err, lockcore.ErrReleaseFailed) || !errors.Is(err, errInjected) {
					t.Errorf("Release() = %v, want ErrReleaseFailed wrapping the store error", err)
				}
				if store.n("release") != tt.wantAttempts {
					t.Errorf("attempts = %d, want %d", store.n("release"), tt.wantAttempts)
				}
				if l.HasLock() {
					t.Error("HasLock() after a failed release = true, want false")
				}
				if time.Now().After(end.Add(100*time.Millisecond)) && tt.remaining < time.Minute {
					t.Errorf("release ran %v past the invocation's end", time.Since(end))
				}
			})
		})
	}
}

func TestReleaseAfterTakeOverPublishesNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := lockcore.NewMemoryStore()
		l := newLock(t, store, "a")
		mustAcquire(t, l)
		l.CancelAutoRenewal()
		it, _, _ := store.Get(context.Background(), l.Key())
		if _, err := store.Acquire(context.Background(), lockcore.AcquireRequest{Key: l.Key(), Revision: "next",
			Lease: time.Second, Observed: &lockcore.Observation{Revision: it.Revision, Beat: it.Beat}}); err != nil {
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
		store.release = func(ctx context.Context, req lockcore.ReleaseRequest) (lockcore.Item, error) {
			it, err := mem.Release(ctx, req)
			if first {
				first = false
				return lockcore.Item{}, errInjected
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
