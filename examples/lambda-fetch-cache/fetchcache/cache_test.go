package fetchcache

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/herdlock/herdlock/internal/dynalite"
	"github.com/herdlock/herdlock/internal/dynoxide/dynoxidetest"
)

func newTestCache(t *testing.T, ttl time.Duration) *Cache {
	t.Helper()
	s := dynoxidetest.Start(t)
	client := dynalite.NewClient(s.Endpoint())
	if err := CreateCacheTable(t.Context(), client, "cache"); err != nil {
		t.Fatal(err)
	}
	return NewCache(client, "cache", ttl)
}

func TestCacheFenceConditionedWrite(t *testing.T) {
	c := newTestCache(t, time.Minute)
	ctx := t.Context()
	if _, found, err := c.Get(ctx, "EUR-USD"); err != nil || found {
		t.Fatalf("Get() on an empty table = found %t, %v", found, err)
	}
	if _, err := c.Put(ctx, "EUR-USD", json.RawMessage(`{"v":5}`), 5); err != nil {
		t.Fatalf("Put(fence 5) = %v", err)
	}
	if _, err := c.Put(ctx, "EUR-USD", json.RawMessage(`{"v":4}`), 4); !errors.Is(err, ErrStaleFence) {
		t.Fatalf("Put(fence 4) after fence 5 = %v, want ErrStaleFence", err)
	}
	e, found, err := c.Get(ctx, "EUR-USD")
	if err != nil || !found || string(e.Data) != `{"v":5}` || e.Fence != 5 {
		t.Fatalf("Get() after the refused write = %+v, %t, %v, want fence 5's data", e, found, err)
	}
	if _, err := c.Put(ctx, "EUR-USD", json.RawMessage(`{"v":"5 again"}`), 5); err != nil {
		t.Fatalf("Put(fence 5) retried = %v, want success", err)
	}
	if _, err := c.Put(ctx, "EUR-USD", json.RawMessage(`{"v":6}`), 6); err != nil {
		t.Fatalf("Put(fence 6) = %v", err)
	}
	e, _, _ = c.Get(ctx, "EUR-USD")
	if string(e.Data) != `{"v":6}` || e.Fence != 6 {
		t.Errorf("Get() = %+v, want fence 6's data", e)
	}
	// Another item is independent.
	if _, err := c.Put(ctx, "GBP-USD", json.RawMessage(`{"v":1}`), 1); err != nil {
		t.Errorf("Put(other item, fence 1) = %v", err)
	}
}

func TestCacheFreshness(t *testing.T) {
	c := newTestCache(t, time.Minute)
	now := time.UnixMilli(1_800_000_000_000)
	c.now = func() time.Time { return now }
	written, err := c.Put(t.Context(), "EUR-USD", json.RawMessage(`{}`), 1)
	if err != nil {
		t.Fatal(err)
	}
	e, _, err := c.Get(t.Context(), "EUR-USD")
	if err != nil {
		t.Fatal(err)
	}
	if !e.FreshUntil.Equal(written.FreshUntil) || !e.FetchedAt.Equal(now) {
		t.Errorf("Get() = %+v, want it as written %+v", e, written)
	}
	if !e.fresh(now.Add(59*time.Second)) || e.fresh(now.Add(time.Minute)) {
		t.Errorf("fresh() wrong around FreshUntil %v", e.FreshUntil)
	}
}
