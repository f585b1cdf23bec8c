package httpmw_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/middleware/httpmw"
	"github.com/herdlock/herdlock/middleware/lockmw"
)

// syncBuffer is a log buffer safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// badFirst answers ErrBadRequest to its first n calls, as a handler that
// decodes a client's body does for malformed ones, then the rate.
func badFirst(n int) handler { return badFirstWith(n, httpmw.ErrBadRequest) }

// badFirstWith is badFirst with the sentinel bad wrapped instead.
func badFirstWith(n int, bad error) handler {
	sentinel := bad
	var mu sync.Mutex
	calls := 0
	return func(ctx context.Context, pair string) (httpmw.Response[rate], error) {
		mu.Lock()
		calls++
		bad := calls <= n
		mu.Unlock()
		if bad {
			return httpmw.Response[rate]{}, fmt.Errorf("%w: amount is not a number", sentinel)
		}
		return okHandler(ctx, pair)
	}
}

// TestBadRequestIsNotTheKeysFailure: a handler's ErrBadRequest, or
// lockmw.ErrBadInput (the same concept one layer down), is answered 400
// and is not an attempt of the key: with one attempt per episode, two
// malformed requests do not take the key offline for the valid one after
// them, which runs its own handler and gets 200.
func TestBadRequestIsNotTheKeysFailure(t *testing.T) {
	for _, sentinel := range []error{httpmw.ErrBadRequest, lockmw.ErrBadInput} {
		for _, s := range shapes {
			t.Run(sentinel.Error()+"/"+s.name, func(t *testing.T) {
				testBadRequestIsNotTheKeysFailure(t, s, sentinel)
			})
		}
	}
}

func testBadRequestIsNotTheKeysFailure(t *testing.T, s shape, sentinel error) {
	synctest.Test(t, func(t *testing.T) {
		c := &counting{h: badFirstWith(2, sentinel)}
		serve := s.wrap(c.handle, lockcore.NewMemoryStore(), quiet(lockcore.WithFailureEpisode(lockcore.FailureEpisode{MaxAttempts: 1})))
		for i, want := range []int{400, 400, 200} {
			g := request(t, serve, sample(t, s, samplePair), 10*time.Second)
			if g.Status != want {
				t.Errorf("request %d: status %d (body %s), want %d", i, g.Status, g.Body, want)
			}
			if want == 400 {
				if p := problem(t, g); p.Reason != "bad_request" || g.header("Retry-After") != "" {
					t.Errorf("request %d: code %q Retry-After %q, want %q and none", i, p.Reason, g.header("Retry-After"), "bad_request")
				}
			}
		}
		wantCalls(t, c.count(), 3)
	})
}

// TestBadRequestIsNotShared: a request waiting for a holder whose client
// sent a bad request does not get that 400: it runs its own handler.
func TestBadRequestIsNotShared(t *testing.T) {
	for _, s := range shapes {
		t.Run(s.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				release := make(chan struct{})
				bad := badFirst(1)
				var mu sync.Mutex
				first := true
				c := &counting{h: func(ctx context.Context, pair string) (httpmw.Response[rate], error) {
					mu.Lock()
					holder := first
					first = false
					mu.Unlock()
					if holder {
						<-release
					}
					return bad(ctx, pair)
				}}
				serve := s.wrap(c.handle, lockcore.NewMemoryStore(), quiet())
				var holder got
				var wg sync.WaitGroup
				wg.Go(func() { holder = request(t, serve, sample(t, s, samplePair), 10*time.Second) })
				synctest.Wait() // the holder is in its handler
				var waiter got
				wg.Go(func() { waiter = request(t, serve, sample(t, s, samplePair), 10*time.Second) })
				synctest.Wait() // the waiter waits for the lock
				close(release)
				wg.Wait()
				if holder.Status != 400 || waiter.Status != 200 {
					t.Errorf("holder %d, waiter %d (body %s); want 400 and the waiter's own 200", holder.Status, waiter.Status, waiter.Body)
				}
				wantCalls(t, c.count(), 2)
			})
		})
	}
}

// TestBadRequestIsLoggedAtWarnWithTheKeyCut: a bad request is the
// client's fault, logged at Warn, and the client's 2 KB key is cut.
func TestBadRequestIsLoggedAtWarnWithTheKeyCut(t *testing.T) {
	long := strings.Repeat("k", 2000)
	tests := []struct {
		name string
		pair string
		h    func() handler
	}{
		{"the handler's ErrBadRequest", long, func() handler { return badFirst(1) }},
		{"no key in the request", "", func() handler { return okHandler }},
	}
	for _, tt := range tests {
		for _, s := range shapes {
			t.Run(tt.name+"/"+s.name, func(t *testing.T) {
				var logs syncBuffer
				serve := s.wrap(tt.h(), lockcore.NewMemoryStore(), quiet(),
					httpmw.WithLockmwOptions(lockmw.WithTelemetry(lockmw.Telemetry{Logger: slog.New(slog.NewJSONHandler(&logs, nil))})))
				if g := request(t, serve, sample(t, s, tt.pair), 10*time.Second); g.Status != 400 {
					t.Fatalf("status %d, want 400", g.Status)
				}
				out := logs.String()
				if !strings.Contains(out, `"level":"WARN"`) || strings.Contains(out, `"level":"ERROR"`) {
					t.Errorf("log:\n%.500s\nwant the line at Warn", out)
				}
				if strings.Contains(out, strings.Repeat("k", 129)) {
					t.Errorf("the log carries the client's whole key")
				}
			})
		}
	}
}
