package lockmw_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/lockcore/storeapi"
	"github.com/herdlock/herdlock/middleware/lockmw"
)

// TestMaxHoldFromDeadline checks the deadline arithmetic: the stored hard
// maximum comes at the deadline minus the margin, and the handler's context
// is cancelled ρ·hold earlier (lockcore's drift allowance, 1% by default),
// so a holder whose clock runs slow still stops before it.
func TestMaxHoldFromDeadline(t *testing.T) {
	tests := []struct {
		name     string
		timeout  time.Duration
		margin   time.Duration
		wantHold time.Duration
	}{
		{"default margin", 15 * time.Second, lockmw.DefaultSafetyMargin, 13 * time.Second},
		{"small margin", 3 * time.Second, 500 * time.Millisecond, 2500 * time.Millisecond},
		{"tiny margin", 5 * time.Second, 100 * time.Millisecond, 4900 * time.Millisecond},
		{"long invocation", 15 * time.Minute, 2 * time.Second, lockcore.DefaultMaxHold},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				store := lockcore.NewMemoryStore()
				key := lockcore.Key{Group: group, ID: "k"}
				var expiresAfter, heldFor time.Duration
				var cause error
				h := mustNew(t, func(ctx context.Context, e event) (string, error) {
					start := time.Now()
					expiresAfter = time.Duration(item(t, store, key).ExpiresAtMs-start.UnixMilli()) * time.Millisecond
					<-ctx.Done()
					heldFor, cause = time.Since(start), context.Cause(ctx)
					return "", ctx.Err()
				}, store, options(lockmw.WithSafetyMargin(tt.margin))...)
				ctx, cancel := invocationContext(t.Context(), tt.timeout, "req")
				defer cancel()
				_, err := h(ctx, event{Key: "k"})
				if !errors.Is(err, context.Canceled) {
					t.Errorf("h() error = %v, want the handler's context.Canceled", err)
				}
				wantHeld := tt.wantHold - tt.wantHold/100
				if expiresAfter != tt.wantHold || heldFor != wantHeld {
					t.Errorf("item expires after %v, context ended after %v; want %v and %v", expiresAfter, heldFor, tt.wantHold, wantHeld)
				}
				if !errors.Is(cause, lockcore.ErrMaxHoldReached) {
					t.Errorf("context.Cause() = %v, want lockcore.ErrMaxHoldReached", cause)
				}
				if it := item(t, store, key); !it.Released || it.Result != lockcore.Failure {
					t.Errorf("item = %+v; want released with failure", it)
				}
			})
		})
	}
}

// TestWaitCappedByDeadline checks that a waiter gives up at the deadline
// minus the margin, however long the maximum wait.
func TestWaitCappedByDeadline(t *testing.T) {
	tests := []struct {
		name    string
		timeout time.Duration
		margin  time.Duration
		maxWait time.Duration
		want    time.Duration
	}{
		{"deadline first", 10 * time.Second, 2 * time.Second, time.Minute, 8 * time.Second},
		{"max wait first", 60 * time.Second, 2 * time.Second, 5 * time.Second, 5 * time.Second},
		{"margin eats most", 3 * time.Second, 2500 * time.Millisecond, time.Minute, 500 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				store := lockcore.NewMemoryStore()
				octx, ocancel := context.WithCancel(t.Context())
				defer ocancel()
				holdElsewhere(t, octx, store, "k")
				h := mustNew(t, func(ctx context.Context, e event) (string, error) { return "", nil },
					store, options(lockmw.WithSafetyMargin(tt.margin), lockmw.WithLockOptions(lockcore.WithMaxWait(tt.maxWait)))...)
				ctx, cancel := invocationContext(t.Context(), tt.timeout, "req")
				defer cancel()
				start := time.Now()
				_, err := h(ctx, event{Key: "k"})
				if got := time.Since(start); got != tt.want || !errors.Is(err, lockmw.ErrLockFailed) {
					t.Errorf("h() = %v after %v; want ErrLockFailed after %v", err, got, tt.want)
				}
			})
		})
	}
}

func TestNoTimeLeft(t *testing.T) {
	tests := []struct {
		name    string
		timeout time.Duration
	}{
		{"deadline passed", -time.Second},
		{"deadline now", 0},
		{"shorter than margin", 1500 * time.Millisecond},
		{"equal to margin", 2 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				store := lockcore.NewMemoryStore()
				var ran atomic.Bool
				h := mustNew(t, func(ctx context.Context, e event) (string, error) { ran.Store(true); return "", nil },
					store, options(lockmw.WithSafetyMargin(2*time.Second))...)
				ctx, cancel := invocationContext(t.Context(), tt.timeout, "req")
				defer cancel()
				_, err := h(ctx, event{Key: "k"})
				if !errors.Is(err, lockcore.ErrNoTimeLeft) || ran.Load() {
					t.Errorf("h() = %v, handler ran %v; want ErrNoTimeLeft without running", err, ran.Load())
				}
				if _, found, _ := store.Get(t.Context(), lockcore.Key{Group: group, ID: "k"}); found {
					t.Error("a lock item was written")
				}
			})
		})
	}
}

// TestNoDeadline: a local run without a deadline uses lockcore's defaults.
func TestNoDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := lockcore.NewMemoryStore()
		key := lockcore.Key{Group: group, ID: "k"}
		var expiresAfter time.Duration
		h := mustNew(t, func(ctx context.Context, e event) (string, error) {
			expiresAfter = time.Duration(item(t, store, key).ExpiresAtMs-time.Now().UnixMilli()) * time.Millisecond
			return "ok", nil
		}, store, options(lockmw.WithHolder(lockmw.Holder{AccountID: 7, AppID: 2}))...)
		if out, err := h(t.Context(), event{Key: "k"}); out != "ok" || err != nil {
			t.Fatalf("h() = %q, %v; want ok, nil", out, err)
		}
		if expiresAfter != lockcore.DefaultMaxHold {
			t.Errorf("item expires after %v, want lockcore.DefaultMaxHold", expiresAfter)
		}
		if it := item(t, store, key); it.RecordAccount != "act:7/app:2" || it.Holder == "" {
			t.Errorf("item = %+v; want account act:7/app:2 and an owner", it)
		}
	})
}

// TestHandlerIgnoresCancellation: the lock is released at the maximum hold
// while the handler still runs, and Wrap returns the handler's result.
func TestHandlerIgnoresCancellation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := lockcore.NewMemoryStore()
		key := lockcore.Key{Group: group, ID: "k"}
		var during storeapi.Item
		h := mustNew(t, func(ctx context.Context, e event) (string, error) {
			time.Sleep(9 * time.Second) // past the 8s hold; ignores ctx
			during = item(t, store, key)
			return "late", nil
		}, store, options()...)
		ctx, cancel := invocationContext(t.Context(), 10*time.Second, "req")
		defer cancel()
		out, err := h(ctx, event{Key: "k"})
		if out != "late" || err != nil {
			t.Errorf("h() = %q, %v; want the handler's late, nil", out, err)
		}
		if !during.Released || during.Result != lockcore.Failure {
			t.Errorf("item while the handler overran = %+v; want released with failure", during)
		}
	})
}

func TestLeaseLost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := &faultStore{Store: lockcore.NewMemoryStore()}
		var cause error
		h := mustNew(t, func(ctx context.Context, e event) (string, error) {
			fs.set(func(s *faultStore) { s.renewLost = true })
			<-ctx.Done()
			cause = context.Cause(ctx)
			return "", ctx.Err()
		}, fs, options()...)
		ctx, cancel := invocationContext(t.Context(), time.Minute, "req")
		defer cancel()
		if _, err := h(ctx, event{Key: "k"}); err == nil {
			t.Error("h() error = nil, want the handler's error")
		}
		if !errors.Is(cause, lockcore.ErrLeaseLost) {
			t.Errorf("context.Cause() = %v, want lockcore.ErrLeaseLost", cause)
		}
	})
}

func TestStoreFaults(t *testing.T) {
	storeErr := errors.New("throttled")
	tests := []struct {
		name    string
		fault   func(*faultStore)
		wantErr error
		wantAt  time.Duration
	}{
		{"store errors", func(s *faultStore) { s.acquireErr = storeErr }, storeErr, 0},
		// The wait ends at 8s (the deadline less the safety margin); lockcore
		// then settles the unanswered acquire on a budget of its own (1s),
		// so that an applied one is not left held by nobody.
		{"store hangs", func(s *faultStore) { s.hang = true }, lockmw.ErrLockFailed, 9 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fs := &faultStore{Store: lockcore.NewMemoryStore()}
				fs.set(tt.fault)
				var ran atomic.Bool
				h := mustNew(t, func(ctx context.Context, e event) (string, error) { ran.Store(true); return "", nil }, fs, options()...)
				ctx, cancel := invocationContext(t.Context(), 10*time.Second, "req")
				defer cancel()
				start := time.Now()
				_, err := h(ctx, event{Key: "k"})
				if !errors.Is(err, lockmw.ErrLockFailed) || !errors.Is(err, tt.wantErr) || ran.Load() {
					t.Errorf("h() = %v, handler ran %v; want ErrLockFailed matching %v, not run", err, ran.Load(), tt.wantErr)
				}
				if got := time.Since(start); got != tt.wantAt {
					t.Errorf("h() returned after %v, want %v", got, tt.wantAt)
				}
			})
		})
	}
}
