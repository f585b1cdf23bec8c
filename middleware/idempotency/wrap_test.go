package idempotency_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/lockcore/storeapi"
	"github.com/herdlock/herdlock/middleware/idempotency"
	"github.com/herdlock/herdlock/middleware/lockmw"
)

// Powertools: the key comes from the event (a JMESPath expression there,
// a typed function here), with a prefix and a static partition: the
// record is the lock item of group = partition, id = prefix#key.
func TestKeyFromEvent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := lockcore.NewMemoryStore()
		c := &counter{}
		h := wrap(t, c, store, idempotency.WithKeys(idempotency.Keys{Prefix: "charge"}), idempotency.WithLockmwOptions(lockmw.WithLockGroup("payments")))
		for range 3 {
			if _, err := invoke(t, h, time.Minute, order{Key: "o-1", Amount: 5}); err != nil {
				t.Fatalf("invoke() = %v", err)
			}
		}
		if got := c.runs.Load(); got != 1 {
			t.Errorf("handler runs = %d, want 1", got)
		}
		it, found := record(t, store, "payments", "charge#o-1")
		if !found || !it.Released || it.Result != lockcore.Success {
			t.Errorf("record payments/charge#o-1 = found %v, %+v; want a completed record", found, it)
		}
	})
}

// Powertools: a missing key raises, or runs without idempotency by
// option; the draft answers 400 (ErrKey). A key is at most 1 KiB.
func TestMissingKey(t *testing.T) {
	tests := []struct {
		name     string
		key      string
		opts     []idempotency.Option
		wantErr  error
		wantRuns int32
	}{
		{"missing, required", "", nil, lockmw.ErrKey, 0},
		{"blank, required", "  ", nil, lockmw.ErrKey, 0},
		{"missing, optional: runs every time", "", []idempotency.Option{idempotency.WithKeys(idempotency.Keys{Optional: true})}, nil, 2},
		{"longer than 1 KiB", strings.Repeat("k", 1025), []idempotency.Option{idempotency.WithKeys(idempotency.Keys{Optional: true})}, lockmw.ErrKey, 0},
		{"1 KiB", strings.Repeat("k", 1024), nil, nil, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := &counter{}
				h := wrap(t, c, lockcore.NewMemoryStore(), tt.opts...)
				for range 2 {
					_, err := invoke(t, h, time.Minute, order{Key: tt.key, Amount: 1})
					if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
						t.Fatalf("invoke() = %v, want %v", err, tt.wantErr)
					}
				}
				if got := c.runs.Load(); got != tt.wantRuns {
					t.Errorf("handler runs = %d, want %d", got, tt.wantRuns)
				}
			})
		})
	}
}

// A key that ends with white space is refused with ErrKey, before any
// record is read: lockmw trims a lock id, so "k " would name the record
// of "k" and replay that key's answer to a payload of the same
// fingerprint. White space inside the id (a leading space, after the
// prefix) is kept, and such a key is a record of its own.
func TestKeyEndingInWhiteSpace(t *testing.T) {
	tests := []struct {
		name    string
		key     string
		wantErr error
	}{
		{"trailing space", "k ", lockmw.ErrKey},
		{"trailing newline", "k\n", lockmw.ErrKey},
		{"trailing no-break space", "k\u00a0", lockmw.ErrKey},
		{"leading space: a record of its own", " k", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := &counter{}
				h, err := idempotency.New(idempotency.Handlers[order, receipt]{Handle: c.handle, Key: orderKey,
					Payload: func(o order) any { return o.Amount }}, lockcore.NewMemoryStore(), quiet())
				if err != nil {
					t.Fatal(err)
				}
				first, err := invoke(t, h, time.Minute, order{Key: "k", Amount: 1})
				if err != nil {
					t.Fatal(err)
				}
				got, err := invoke(t, h, time.Minute, order{Key: tt.key, Amount: 1})
				if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) || (err == nil && got == first) {
					t.Errorf("invoke(key %q) = %+v, %v; want %v and not key \"k\"'s answer %+v", tt.key, got, err, tt.wantErr, first)
				}
				wantRuns := int32(1)
				if tt.wantErr == nil {
					wantRuns = 2
				}
				if got := c.runs.Load(); got != wantRuns {
					t.Errorf("handler runs = %d, want %d", got, wantRuns)
				}
			})
		})
	}
}

// Powertools, the draft and Stripe: a key reused with another payload is
// an error (422), the handler does not run again; the fingerprint is of
// canonical JSON, so the same payload with its keys in another order is
// the same request.
func TestPayloadFingerprint(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := &counter{}
		h := wrap(t, c, lockcore.NewMemoryStore())
		first := order{Key: "k", Amount: 5, Tags: map[string]string{"a": "1", "b": "2"}}
		if _, err := invoke(t, h, time.Minute, first); err != nil {
			t.Fatalf("first invoke() = %v", err)
		}
		_, err := invoke(t, h, time.Minute, order{Key: "k", Amount: 6})
		if !errors.Is(err, idempotency.ErrPayloadMismatch) {
			t.Errorf("invoke(another amount) = %v, want ErrPayloadMismatch", err)
		}
		if _, err := invoke(t, h, time.Minute, first); err != nil {
			t.Errorf("invoke(the same payload) = %v, want its replay", err)
		}
		if got := c.runs.Load(); got != 1 {
			t.Errorf("handler runs = %d, want 1", got)
		}
	})
	// Canonical: object keys sorted, white space ignored.
	synctest.Test(t, func(t *testing.T) {
		type body struct {
			Key  string
			Body json.RawMessage
		}
		runs := 0
		h, err := idempotency.New(idempotency.Handlers[body, int]{
			Handle:  func(context.Context, body) (int, error) { runs++; return runs, nil },
			Key:     func(_ context.Context, b body) (string, error) { return b.Key, nil },
			Payload: func(b body) any { return b.Body },
		}, lockcore.NewMemoryStore(), quiet())
		if err != nil {
			t.Fatal(err)
		}
		tests := []struct {
			body    string
			wantErr error
		}{
			{`{"b":{"y":1,"x":[1,2]},"a":"s"}`, nil},
			{`{ "a" : "s", "b" : { "x" : [1,2], "y" : 1 } }`, nil},
			{`{"a":"s","b":{"x":[2,1],"y":1}}`, idempotency.ErrPayloadMismatch},
		}
		for _, tt := range tests {
			_, err := h(t.Context(), body{Key: "k", Body: json.RawMessage(tt.body)})
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Errorf("invoke(%s) = %v, want %v", tt.body, err, tt.wantErr)
			}
		}
		if runs != 1 {
			t.Errorf("handler runs = %d, want 1", runs)
		}
		// A json.RawMessage of JSON syntax whose bytes are not UTF-8:
		// decoded, both strings would be U+FFFD; they are two payloads.
		if _, err := h(t.Context(), body{Key: "bytes", Body: json.RawMessage("\"\xff\"")}); err != nil {
			t.Fatal(err)
		}
		if _, err := h(t.Context(), body{Key: "bytes", Body: json.RawMessage("\"\xfe\"")}); !errors.Is(err, idempotency.ErrPayloadMismatch) {
			t.Errorf("invoke(another string of bytes that are not UTF-8) = %v, want ErrPayloadMismatch", err)
		}
	})
}

// The payload is validated on every path that can answer: the record
// returned by a refused write, the fresh success read first, a waiter's
// read in another process, a follower of this process, and the local
// cache. Each path replays the first payload's answer to the same
// payload and refuses it to another.
func TestPayloadValidatedOnEveryPath(t *testing.T) {
	// Each path returns the invocation that must be refused.
	type setup func(t *testing.T, store storeapi.Store) func(order) (receipt, error)
	held := func(t *testing.T, store storeapi.Store, sameProcess bool) func(order) (receipt, error) {
		// The first payload's holder runs until the duplicate waits.
		c := &counter{block: make(chan struct{}), started: make(chan struct{}, 1)}
		h1 := wrap(t, c, store)
		h2 := h1
		if !sameProcess {
			h2 = wrap(t, c, store)
		}
		var wg sync.WaitGroup
		wg.Go(func() {
			if _, err := invoke(t, h1, time.Minute, order{Key: "k", Amount: 1}); err != nil {
				t.Errorf("holder: %v", err)
			}
		})
		<-c.started
		return func(o order) (receipt, error) {
			defer wg.Wait()
			go func() { time.Sleep(2 * time.Second); close(c.block) }()
			return invoke(t, h2, time.Minute, o)
		}
	}
	completed := func(t *testing.T, store storeapi.Store, opts ...idempotency.Option) func(order) (receipt, error) {
		h := wrap(t, &counter{}, store, opts...)
		if _, err := invoke(t, h, time.Minute, order{Key: "k", Amount: 1}); err != nil {
			t.Fatalf("first: %v", err)
		}
		return func(o order) (receipt, error) { return invoke(t, h, time.Minute, o) }
	}
	tests := []struct {
		name  string
		setup setup
	}{
		{"record returned by the refused write", func(t *testing.T, s storeapi.Store) func(order) (receipt, error) {
			return completed(t, s, idempotency.WithLockmwOptions(lockmw.WithLockOptions(lockcore.WithHerd(lockcore.Herd{NoHotKeys: true}))))
		}},
		{"fresh success read first", func(t *testing.T, s storeapi.Store) func(order) (receipt, error) {
			return completed(t, s, idempotency.WithLockmwOptions(lockmw.WithLockOptions(lockcore.WithHerd(lockcore.Herd{ReadFirst: true}))))
		}},
		{"a waiter's read in another process", func(t *testing.T, s storeapi.Store) func(order) (receipt, error) {
			return held(t, s, false)
		}},
		{"a follower in this process", func(t *testing.T, s storeapi.Store) func(order) (receipt, error) {
			return held(t, s, true)
		}},
		{"the local cache", func(t *testing.T, s storeapi.Store) func(order) (receipt, error) {
			cache, err := idempotency.NewCache(10, 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			return completed(t, s, idempotency.WithCache(cache))
		}},
	}
	for _, tt := range tests {
		for _, amount := range []int{1, 2} {
			t.Run(fmt.Sprintf("%s/amount %d", tt.name, amount), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					store := &countingStore{Store: lockcore.NewMemoryStore()}
					again := tt.setup(t, store)
					got, err := again(order{Key: "k", Amount: amount})
					switch {
					case amount == 1 && (err != nil || got.Amount != 1):
						t.Errorf("the same payload = %+v, %v; want the first answer", got, err)
					case amount == 2 && !errors.Is(err, idempotency.ErrPayloadMismatch):
						t.Errorf("another payload = %+v, %v; want ErrPayloadMismatch", got, err)
					}
				})
			})
		}
	}
}
