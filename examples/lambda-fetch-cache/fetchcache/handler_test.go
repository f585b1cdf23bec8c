package fetchcache

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/middleware/lockmw"
)

// countingUpstream starts an upstream that answers every request with its
// path and a call number, and returns a client for it and the count.
func countingUpstream(t *testing.T) (*Upstream, *atomic.Int32) {
	t.Helper()
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := calls.Add(1)
		json.NewEncoder(w).Encode(map[string]any{"path": r.URL.Path, "call": n})
	}))
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	return NewUpstream(u, srv.Client()), &calls
}

// quietOptions are the lockmw options of the handler tests: a fixed
// account, no metrics and no logs.
var quietOptions = []lockmw.Option{
	lockmw.WithHolder(lockmw.Holder{AccountID: 1, AppID: 1}),
	lockmw.WithTelemetry(lockmw.Telemetry{EMFWriter: io.Discard}),
	lockmw.WithTelemetry(lockmw.Telemetry{Logger: slog.New(slog.DiscardHandler)}),
}

func newTestHandler(t *testing.T, c *Cache) (func(context.Context, Request) (Response, error), *atomic.Int32) {
	t.Helper()
	up, calls := countingUpstream(t)
	h, err := NewHandler(lockcore.NewMemoryStore(), "test", c, up, quietOptions...)
	if err != nil {
		t.Fatalf("NewHandler() = %v", err)
	}
	return h, calls
}

func invocationContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestHandlerFetchesOnceThenServesTheCache(t *testing.T) {
	h, calls := newTestHandler(t, newTestCache(t, time.Minute))
	first, err := h(invocationContext(t), Request{Pair: "EUR-USD"})
	if err != nil {
		t.Fatalf("first invocation = %v", err)
	}
	if first.Outcome != "ACQUIRED" || first.Source != SourceUpstream || first.Fence == 0 || calls.Load() != 1 {
		t.Fatalf("first invocation = %+v after %d upstream calls, want ACQUIRED from upstream after 1", first, calls.Load())
	}
	second, err := h(invocationContext(t), Request{Pair: " EUR-USD "})
	if err != nil {
		t.Fatalf("second invocation = %v", err)
	}
	if second.Outcome != OutcomeNone || second.Source != SourceCache || string(second.Data) != string(first.Data) || second.Fence != first.Fence || calls.Load() != 1 {
		t.Errorf("second invocation = %+v, want the first data from the cache without the lock", second)
	}
}

func TestHandlerNeverOverwritesANewerFence(t *testing.T) {
	c := newTestCache(t, time.Minute)
	// A newer holder (fence far above any the memory store will issue)
	// stored data that is no longer fresh.
	c.now = func() time.Time { return time.Now().Add(-time.Hour) }
	if _, err := c.Put(t.Context(), "EUR-USD", json.RawMessage(`{"newer":true}`), 1<<62); err != nil {
		t.Fatal(err)
	}
	c.now = time.Now
	h, calls := newTestHandler(t, c)
	got, err := h(invocationContext(t), Request{Pair: "EUR-USD"})
	if err != nil {
		t.Fatalf("invocation = %v", err)
	}
	if calls.Load() != 1 || got.Source != SourceCache || string(got.Data) != `{"newer":true}` || got.Fence != 1<<62 {
		t.Errorf("invocation = %+v after %d upstream calls; want the newer fence's data kept and served", got, calls.Load())
	}
}

func TestHandlerRejectsBadEvents(t *testing.T) {
	h, calls := newTestHandler(t, newTestCache(t, time.Minute))
	for _, pair := range []string{"", "EUR/USD", "a b"} {
		if _, err := h(invocationContext(t), Request{Pair: pair}); !errors.Is(err, ErrBadRequest) {
			t.Errorf("pair %q: %v, want ErrBadRequest", pair, err)
		}
	}
	if calls.Load() != 0 {
		t.Errorf("upstream calls = %d, want 0", calls.Load())
	}
}
