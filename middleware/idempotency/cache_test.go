package idempotency_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/middleware/idempotency"
)

func newCache(t *testing.T, entries, bytes int) *idempotency.Cache {
	t.Helper()
	c, err := idempotency.NewCache(entries, bytes)
	if err != nil {
		t.Fatalf("NewCache() = %v", err)
	}
	return c
}

// Powertools' local cache (an LRU, off by default): a duplicate this
// process answered is replayed without a request to the store, checked
// against its payload, and only until the record's expiry.
func TestCacheReplaysWithoutTheStore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &countingStore{Store: lockcore.NewMemoryStore()}
		c := &counter{}
		h := wrap(t, c, store, idempotency.WithCache(newCache(t, 10, 1<<20)), idempotency.WithRetention(idempotency.Retention{Answers: time.Minute}))
		first, err := invoke(t, h, time.Minute, order{Key: "k", Amount: 1})
		if err != nil {
			t.Fatal(err)
		}
		before := store.calls.Load()
		tests := []struct {
			name    string
			o       order
			wantErr error
		}{
			{"the same payload", order{Key: "k", Amount: 1}, nil},
			{"another payload", order{Key: "k", Amount: 2}, idempotency.ErrPayloadMismatch},
		}
		for _, tt := range tests {
			got, err := invoke(t, h, time.Minute, tt.o)
			if !errors.Is(err, tt.wantErr) || (err == nil && got != first) {
				t.Errorf("%s: invoke() = %+v, %v; want %+v, %v", tt.name, got, err, first, tt.wantErr)
			}
		}
		if got := store.calls.Load() - before; got != 0 {
			t.Errorf("store calls for cached answers = %d, want 0", got)
		}
		time.Sleep(time.Minute + time.Millisecond)
		if _, err := invoke(t, h, time.Minute, order{Key: "k", Amount: 1}); err != nil {
			t.Fatal(err)
		}
		if got := c.runs.Load(); got != 2 {
			t.Errorf("handler runs after the expiry = %d, want 2 (the cache ends with the record)", got)
		}
	})
}

// The cache is bounded by entries and by bytes, least recently used out.
func TestCacheBounds(t *testing.T) {
	big := strings.Repeat("x", 2000)
	tests := []struct {
		name       string
		entries    int
		bytes      int
		note       string
		wantCached []string // keys answered from the cache after k1, k2, k1, k3, asked in the order k3, k1, k2
	}{
		{"by entries", 2, 1 << 20, "", []string{"k3", "k1"}},
		{"by bytes", 10, 4500, big, []string{"k3", "k1"}},
		{"an answer larger than the bound", 10, 1000, big, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				store := &countingStore{Store: lockcore.NewMemoryStore()}
				h, err := idempotency.New(idempotency.Handlers[order, string]{
					Handle: func(_ context.Context, o order) (string, error) { return o.Note, nil },
					Key:    orderKey,
				}, store, quiet(), idempotency.WithCache(newCache(t, tt.entries, tt.bytes)))
				if err != nil {
					t.Fatal(err)
				}
				call := func(key string) bool {
					before := store.calls.Load()
					if _, err := h(t.Context(), order{Key: key, Note: tt.note}); err != nil {
						t.Fatalf("invoke(%s) = %v", key, err)
					}
					return store.calls.Load() == before
				}
				call("k1")
				call("k2")
				call("k1") // most recently used
				call("k3")
				var cached []string
				for _, k := range []string{"k3", "k1", "k2"} { // a miss last: its answer is cached then

					if call(k) {
						cached = append(cached, k)
					}
				}
				if strings.Join(cached, ",") != strings.Join(tt.wantCached, ",") {
					t.Errorf("cached = %v, want %v", cached, tt.wantCached)
				}
			})
		})
	}
}

// Powertools python#3821: only completed answers that passed validation
// are cached. A holder whose record was taken over (its lease lapsed) does
// not cache its own answer, which the record does not hold: the next
// duplicate in its process replays the successor's; nor is an error
// cached, nor an answer refused for its payload.
func TestCacheHoldsOnlyValidatedCompletedAnswers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &stallStore{Store: lockcore.NewMemoryStore(), stalled: map[string]bool{}, stallAll: true}
		cache := newCache(t, 10, 1<<20)
		late := &counter{block: make(chan struct{}), started: make(chan struct{}, 1)}
		lateProcess := wrap(t, late, store, idempotency.WithCache(cache))
		var wg sync.WaitGroup
		var lateErr error
		wg.Go(func() { _, lateErr = invoke(t, lateProcess, 10*time.Minute, order{Key: "k", Amount: 1}) })
		<-late.started
		succ, err := invoke(t, wrap(t, &counter{}, store), 10*time.Minute, order{Key: "k", Amount: 1})
		if err != nil {
			t.Fatal(err)
		}
		close(late.block)
		wg.Wait()
		if f := late.fence.Load(); f == 0 || f >= succ.Fence || !errors.Is(lateErr, lockcore.ErrLeaseLost) {
			t.Fatalf("late holder's run with fence %d, %v; successor's %+v; want the late one's fence lower, its lease lost", f, lateErr, succ)
		}
		got, err := invoke(t, lateProcess, time.Minute, order{Key: "k", Amount: 1})
		if err != nil || got != succ {
			t.Errorf("the late holder's process replays %+v, %v; want the successor's %+v", got, err, succ)
		}

		// An error is not cached: the next duplicate runs.
		failing := &counter{err: errors.New("upstream failed")}
		h := wrap(t, failing, lockcore.NewMemoryStore(), idempotency.WithCache(cache))
		for range 2 {
			_, _ = invoke(t, h, time.Minute, order{Key: "e", Amount: 1})
		}
		if got := failing.runs.Load(); got != 2 {
			t.Errorf("runs of a failing handler = %d, want 2", got)
		}
	})
}

// One cache may serve many operations: an operation on another store
// (another table) never replays the answer that another operation with
// the same prefix, partition and key cached, even when the payloads are
// the same.
func TestCacheSharedByOperationsOnTwoStores(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cache := newCache(t, 10, 1<<20)
		a, b := &counter{}, &counter{}
		ha := wrap(t, a, lockcore.NewMemoryStore(), idempotency.WithCache(cache))
		hb := wrap(t, b, lockcore.NewMemoryStore(), idempotency.WithCache(cache))
		if _, err := invoke(t, ha, time.Minute, order{Key: "k", Amount: 1}); err != nil {
			t.Fatal(err)
		}
		if _, err := invoke(t, hb, time.Minute, order{Key: "k", Amount: 1}); err != nil {
			t.Fatal(err)
		}
		if got := b.runs.Load(); got != 1 {
			t.Errorf("runs of the second operation = %d, want 1 (its store has no record of the key)", got)
		}
	})
}
