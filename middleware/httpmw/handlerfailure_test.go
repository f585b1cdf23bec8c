package httpmw_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/middleware/httpmw"
)

// panicFirst panics in its first call, then answers the rate.
func panicFirst() handler {
	var once sync.Once
	return func(ctx context.Context, pair string) (httpmw.Response[rate], error) {
		once.Do(func() { panic("index out of range [7] with length 3") })
		return okHandler(ctx, pair)
	}
}

// TestHandlerPanicIs500WithTheLockReleased: a handler's panic never
// escapes the adapter (a Lambda runtime would end the process and API
// Gateway answer its own 502): the client gets 500 problem+json without
// the panic's text, and the lock is released, so the next request runs
// the handler and gets 200. Also for a method that runs without the lock.
func TestHandlerPanicIs500WithTheLockReleased(t *testing.T) {
	for _, method := range []string{"GET", "POST"} {
		for _, s := range shapes {
			t.Run(method+"/"+s.name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					c := &counting{h: panicFirst()}
					serve := s.wrap(c.handle, lockcore.NewMemoryStore(), quiet())
					first := request(t, serve, withMethod(t, sample(t, s, samplePair), method), 10*time.Second)
					second := request(t, serve, withMethod(t, sample(t, s, samplePair), method), 10*time.Second)
					if first.Status != 500 || second.Status != 200 {
						t.Errorf("statuses %d, %d; want 500 then 200", first.Status, second.Status)
					}
					if p := problem(t, first); p.Reason != "internal" || first.header("Cache-Control") != "no-store" {
						t.Errorf("problem code %q Cache-Control %q, want %q and no-store", p.Reason, first.header("Cache-Control"), "internal")
					}
					wantCalls(t, c.count(), 2)
				})
			})
		}
	}
}

// TestHandlers5xxIsNotShared: a handler's own 503 Response with a nil
// error goes to its client and is not published as the key's success: the
// next request within the fresh window runs the handler again.
func TestHandlers5xxIsNotShared(t *testing.T) {
	for _, s := range shapes {
		t.Run(s.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var once sync.Once
				c := &counting{h: func(ctx context.Context, pair string) (httpmw.Response[rate], error) {
					unavailable := false
					once.Do(func() { unavailable = true })
					if unavailable {
						return httpmw.Response[rate]{Status: http.StatusServiceUnavailable, Body: rate{Pair: "down"}}, nil
					}
					return okHandler(ctx, pair)
				}}
				serve := s.wrap(c.handle, lockcore.NewMemoryStore(), quiet(), httpmw.WithFreshSuccess(time.Minute))
				first := request(t, serve, sample(t, s, samplePair), 10*time.Second)
				second := request(t, serve, sample(t, s, samplePair), 10*time.Second)
				if first.Status != 503 || string(first.Body) != `{"pair":"down","bid":0}` || first.header("Content-Type") != "application/json" {
					t.Errorf("holder: %d %q %s, want the handler's own 503", first.Status, first.header("Content-Type"), first.Body)
				}
				if second.Status != 200 {
					t.Errorf("next request: %d %s, want its own 200", second.Status, second.Body)
				}
				wantCalls(t, c.count(), 2)
			})
		})
	}
}

// TestHandlers429IsNotShared: a handler's own 429 Response is the
// holder's, not an answer to share: a 429 must not be stored by a cache
// (RFC 6585 §4), and the fresh-success window is one. The holder's client
// gets it and the lock is released as the key's failure: a waiter of the
// burst makes its own attempt while the failure episode has attempts
// left, and is told the key is throttled, 429 with Retry-After (RFC 9110
// §10.2.3), once it has none and the hold-back is longer than it can
// wait.
func TestHandlers429IsNotShared(t *testing.T) {
	tests := []struct {
		name       string
		attempts   int
		wantWaiter int
		wantCalls  int
	}{
		{"attempts left", lockcore.DefaultMaxAttempts, 200, 2},
		{"no attempt left", 1, 429, 1},
	}
	for _, tt := range tests {
		for _, s := range shapes {
			t.Run(tt.name+"/"+s.name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					release := make(chan struct{})
					var once sync.Once
					c := &counting{h: func(ctx context.Context, pair string) (httpmw.Response[rate], error) {
						throttled := false
						once.Do(func() { throttled = true; <-release })
						if throttled {
							return httpmw.Response[rate]{Status: http.StatusTooManyRequests, Body: rate{Pair: "slow down"}}, nil
						}
						return okHandler(ctx, pair)
					}}
					serve := s.wrap(c.handle, lockcore.NewMemoryStore(), quiet(lockcore.WithFailureEpisode(lockcore.FailureEpisode{MaxAttempts: tt.attempts, Window: time.Minute})),
						httpmw.WithFreshSuccess(time.Minute))
					var holder, waiter got
					var wg sync.WaitGroup
					wg.Go(func() { holder = request(t, serve, sample(t, s, samplePair), 10*time.Second) })
					synctest.Wait() // the holder is in its handler
					wg.Go(func() { waiter = request(t, serve, sample(t, s, samplePair), 10*time.Second) })
					synctest.Wait() // the waiter waits for the lock
					close(release)
					wg.Wait()
					next := request(t, serve, sample(t, s, samplePair), 10*time.Second)
					if holder.Status != 429 || string(holder.Body) != `{"pair":"slow down","bid":0}` {
						t.Errorf("holder: %d %s, want its handler's own 429", holder.Status, holder.Body)
					}
					if waiter.Status != tt.wantWaiter || next.Status != tt.wantWaiter {
						t.Errorf("waiter %d %s, next request %d %s; want %d", waiter.Status, waiter.Body, next.Status, next.Body, tt.wantWaiter)
					}
					if tt.wantWaiter == 429 && (waiter.header("Retry-After") == "" || waiter.header("Cache-Control") != "no-store") {
						t.Errorf("waiter's 429: Retry-After %q Cache-Control %q, want Retry-After and no-store",
							waiter.header("Retry-After"), waiter.header("Cache-Control"))
					}
					wantCalls(t, c.count(), tt.wantCalls)
				})
			})
		}
	}
}
