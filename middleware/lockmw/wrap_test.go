package lockmw_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/lockcore/storeapi"
	"github.com/herdlock/herdlock/middleware/lockmw"
)

const group = "fx"

// options are the tests' usual options, then extra.
func options(extra ...lockmw.Option) []lockmw.Option {
	return append([]lockmw.Option{
		lockmw.WithLockGroup(group),
		lockmw.WithTelemetry(lockmw.Telemetry{Logger: discardLogger()}),
		lockmw.WithTelemetry(lockmw.Telemetry{EMFWriter: io.Discard}),
	}, extra...)
}

// mustNew wraps h on store with the key function keyOf.
func mustNew(t *testing.T, h func(context.Context, event) (string, error), store storeapi.Store, opts ...lockmw.Option) func(context.Context, event) (string, error) {
	t.Helper()
	return mustNewHandlers(t, lockmw.Handlers[event, string]{Fetch: h}, store, opts...)
}

// mustNewHandlers wraps hs on store with the key function keyOf.
func mustNewHandlers(t *testing.T, hs lockmw.Handlers[event, string], store storeapi.Store, opts ...lockmw.Option) func(context.Context, event) (string, error) {
	t.Helper()
	f, err := lockmw.NewHandlers(hs, store, keyOf, opts...)
	if err != nil {
		t.Fatalf("NewHandlers() = %v", err)
	}
	return f
}

// holdElsewhere acquires key with another Lock, as another invocation would.
func holdElsewhere(t *testing.T, ctx context.Context, store storeapi.Store, id string) *lockcore.Lock {
	t.Helper()
	l, err := lockcore.New(store, lockcore.Params{LockID: id, LockGroup: group, HolderName: "other", AccountID: 1, AppID: 1},
		lockcore.WithLogger(discardLogger()))
	if err != nil {
		t.Fatalf("lockcore.New() = %v", err)
	}
	if ok, err := l.Acquire(ctx); !ok || err != nil {
		t.Fatalf("Acquire() = %v, %v; want true, nil", ok, err)
	}
	return l
}

func TestAcquired(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := lockcore.NewMemoryStore()
		var got lockmw.Info
		var deadline time.Time
		h := mustNewHandlers(t, lockmw.Handlers[event, string]{
			Fetch: func(ctx context.Context, e event) (string, error) {
				got, _ = lockmw.FromContext(ctx)
				deadline, _ = ctx.Deadline()
				return "rates-v1", nil
			},
			ResultRef: func(s string) string { return "cache/" + s },
		}, store, options()...)
		ctx, cancel := invocationContext(t.Context(), 10*time.Second, "req-1")
		defer cancel()
		start := time.Now()
		out, err := h(ctx, event{Key: "EUR-USD"})
		if out != "rates-v1" || err != nil {
			t.Fatalf("h() = %q, %v; want rates-v1, nil", out, err)
		}
		key := lockcore.Key{Group: group, ID: "EUR-USD"}
		if got.Outcome != lockcore.Acquired || got.Key != key || got.Fence <= 0 || got.Revision == "" || got.TookOver {
			t.Errorf("FromContext() = %+v; want ACQUIRED of %v with a fence and a revision, no take-over", got, key)
		}
		if want := start.Add(10 * time.Second); !deadline.Equal(want) {
			t.Errorf("handler deadline = %v, want the invocation's %v", deadline, want)
		}
		it := item(t, store, key)
		if !it.Released || it.Result != lockcore.Success || it.ResultRef != "cache/rates-v1" || it.ResultFence != got.Fence {
			t.Errorf("item after h() = %+v; want released with success, ref cache/rates-v1, fence %d", it, got.Fence)
		}
		if want := "/req-1"; !strings.HasSuffix(it.Holder, want) {
			t.Errorf("item owner = %q, want suffix %q", it.Holder, want)
		}
		if it.RecordAccount != "act:123456789012/app:1" {
			t.Errorf("item record account = %q, want the ARN's account and app 1", it.RecordAccount)
		}
	})
}

func TestHandlerErrorReleasesAsFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := lockcore.NewMemoryStore()
		boom := errors.New("upstream 503")
		h := mustNew(t, func(ctx context.Context, e event) (string, error) { return "", boom }, store, options()...)
		ctx, cancel := invocationContext(t.Context(), 10*time.Second, "req-1")
		defer cancel()
		if _, err := h(ctx, event{Key: "k"}); !errors.Is(err, boom) {
			t.Fatalf("h() error = %v, want the handler's %v", err, boom)
		}
		if it := item(t, store, lockcore.Key{Group: group, ID: "k"}); !it.Released || it.Result != lockcore.Failure {
			t.Errorf("item = %+v; want released with failure", it)
		}
	})
}

func TestReleased(t *testing.T) {
	tests := []struct {
		name     string
		withRead bool
		wantMain int32
		wantRead int32
	}{
		{"read handler", true, 0, 1},
		{"main handler as the read handler", false, 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				store := lockcore.NewMemoryStore()
				other := holdElsewhere(t, t.Context(), store, "k")
				var mainCalls, readCalls atomic.Int32
				var got lockmw.Info
				main := func(ctx context.Context, e event) (string, error) {
					mainCalls.Add(1)
					got, _ = lockmw.FromContext(ctx)
					return "main", nil
				}
				read := func(ctx context.Context, e event) (string, error) {
					readCalls.Add(1)
					got, _ = lockmw.FromContext(ctx)
					return "read", nil
				}
				hs := lockmw.Handlers[event, string]{Fetch: main, OnReleased: main}
				if tt.withRead {
					hs.OnReleased = read
				}
				h := mustNewHandlers(t, hs, store, options()...)
				ctx, cancel := invocationContext(t.Context(), 10*time.Second, "req-2")
				defer cancel()
				done := make(chan error)
				go func() {
					_, err := h(ctx, event{Key: "k"})
					done <- err
				}()
				synctest.Wait() // the invocation waits for the other holder
				if err := other.Release(t.Context(), lockcore.Success, "ref-7"); err != nil {
					t.Fatalf("Release() = %v", err)
				}
				if err := <-done; err != nil {
					t.Fatalf("h() = %v", err)
				}
				if mainCalls.Load() != tt.wantMain || readCalls.Load() != tt.wantRead {
					t.Errorf("main, read calls = %d, %d; want %d, %d", mainCalls.Load(), readCalls.Load(), tt.wantMain, tt.wantRead)
				}
				if got.Outcome != lockcore.Released || got.ResultRef != "ref-7" || got.Polls < 1 || got.Waited <= 0 || got.Fence <= 0 {
					t.Errorf("FromContext() = %+v; want RELEASED with ref-7, polls, a wait and the holder's fence", got)
				}
			})
		})
	}
}

func TestFailed(t *testing.T) {
	tests := []struct {
		name         string
		withFallback bool
	}{
		{"error", false},
		{"fallback", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				store := lockcore.NewMemoryStore()
				octx, ocancel := context.WithCancel(t.Context())
				other := holdElsewhere(t, octx, store, "k") // renews, never releases in time
				var fallbackErr error
				var ran atomic.Bool
				hs := lockmw.Handlers[event, string]{
					Fetch: func(ctx context.Context, e event) (string, error) { ran.Store(true); return "x", nil },
				}
				if tt.withFallback {
					hs.OnFailed = func(ctx context.Context, e event, err error) (string, error) {
						fallbackErr = err
						return "stale", nil
					}
				}
				h := mustNewHandlers(t, hs, store, options(lockmw.WithSafetyMargin(2*time.Second))...)
				ctx, cancel := invocationContext(t.Context(), 10*time.Second, "req-3")
				defer cancel()
				start := time.Now()
				out, err := h(ctx, event{Key: "k"})
				elapsed := time.Since(start)
				if ran.Load() {
					t.Error("handler ran on FAILED")
				}
				if elapsed != 8*time.Second {
					t.Errorf("FAILED after %v, want 8s (10s deadline - 2s margin)", elapsed)
				}
				if tt.withFallback {
					if out != "stale" || err != nil {
						t.Errorf("h() = %q, %v; want the fallback's stale, nil", out, err)
					}
					err = fallbackErr
				}
				if !errors.Is(err, lockmw.ErrLockFailed) || !errors.Is(err, lockcore.ErrWaitTimeout) {
					t.Errorf("error = %v; want ErrLockFailed wrapping lockcore.ErrWaitTimeout", err)
				}
				ocancel()
				_ = other.Release(t.Context(), lockcore.Failure, "")
			})
		})
	}
}

func TestTakeOver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := lockcore.NewMemoryStore()
		// A holder that acquired and then died: its releases never reach
		// the store, and its renewals stop with its context.
		dctx, kill := context.WithCancel(t.Context())
		dead := holdElsewhere(t, dctx, &faultStore{Store: store, dropRelease: true}, "k")
		deadFence := dead.Fence()
		kill()
		fs := store
		var got lockmw.Info
		var calls atomic.Int32
		h := mustNew(t, func(ctx context.Context, e event) (string, error) {
			calls.Add(1)
			got, _ = lockmw.FromContext(ctx)
			return "fresh", nil
		}, fs, options()...)
		ctx, cancel := invocationContext(t.Context(), 30*time.Second, "req-4")
		defer cancel()
		if out, err := h(ctx, event{Key: "k"}); out != "fresh" || err != nil {
			t.Fatalf("h() = %q, %v; want fresh, nil", out, err)
		}
		if calls.Load() != 1 || got.Outcome != lockcore.Acquired || !got.TookOver || got.Fence != deadFence+1 || got.Waited <= 0 {
			t.Errorf("calls %d, FromContext() = %+v; want one ACQUIRED take-over with fence %d after a wait", calls.Load(), got, deadFence+1)
		}
		if it := item(t, store, lockcore.Key{Group: group, ID: "k"}); !it.Released || it.Result != lockcore.Success {
			t.Errorf("item = %+v; want released with success", it)
		}
	})
}
