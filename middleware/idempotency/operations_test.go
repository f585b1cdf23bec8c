package idempotency_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/middleware/idempotency"
	"github.com/herdlock/herdlock/middleware/lockmw"
)

// Powertools typescript#5409: a persistence layer shared by two
// operations kept the first one's configuration. Here two operations on
// one store and one slice of shared options keep their own key prefix,
// payload, retention and key rule, and changing the Handlers value after
// New changes nothing.
func TestConfigurationPerOperation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := lockcore.NewMemoryStore()
		shared := make([]idempotency.Option, 0, 8) // room to append: no aliasing either
		shared = append(shared, quiet())
		users, products := &counter{}, &counter{}
		usersHS := idempotency.Handlers[order, receipt]{Handle: users.handle, Key: orderKey,
			Payload: func(o order) any { return o.Amount }}
		userOp, err := idempotency.New(usersHS, store,
			append(shared, idempotency.WithKeyPrefix("users"), idempotency.WithExpiresAfter(time.Minute))...)
		if err != nil {
			t.Fatal(err)
		}
		productOp, err := idempotency.New(idempotency.Handlers[order, receipt]{Handle: products.handle, Key: orderKey,
			Payload: func(o order) any { return o.Note }}, store,
			append(shared, idempotency.WithKeyPrefix("products"), idempotency.WithOptionalKey())...)
		if err != nil {
			t.Fatal(err)
		}
		usersHS.Payload = func(order) any { return "changed after New" }
		usersHS.Handle = products.handle

		// One key, both operations: each runs once.
		_, _ = invoke(t, userOp, time.Minute, order{Key: "k", Amount: 1, Note: "a"})
		_, _ = invoke(t, productOp, time.Minute, order{Key: "k", Amount: 1, Note: "a"})
		if users.runs.Load() != 1 || products.runs.Load() != 1 {
			t.Errorf("runs = users %d, products %d; want 1 each", users.runs.Load(), products.runs.Load())
		}
		// Each operation's payload: users by amount, products by note.
		if _, err := invoke(t, userOp, time.Minute, order{Key: "k", Amount: 1, Note: "other note"}); err != nil {
			t.Errorf("users, another note = %v, want a replay (its payload is the amount)", err)
		}
		if _, err := invoke(t, productOp, time.Minute, order{Key: "k", Amount: 2, Note: "a"}); err != nil {
			t.Errorf("products, another amount = %v, want a replay (its payload is the note)", err)
		}
		if _, err := invoke(t, userOp, time.Minute, order{Key: "k", Amount: 2}); !errors.Is(err, idempotency.ErrPayloadMismatch) {
			t.Errorf("users, another amount = %v, want ErrPayloadMismatch", err)
		}
		// Each operation's key rule.
		if _, err := invoke(t, userOp, time.Minute, order{}); !errors.Is(err, idempotency.ErrKey) {
			t.Errorf("users without a key = %v, want ErrKey", err)
		}
		if _, err := invoke(t, productOp, time.Minute, order{}); err != nil {
			t.Errorf("products without a key = %v, want a run", err)
		}
		// Each operation's retention: users' ended, products' did not.
		time.Sleep(time.Minute + time.Millisecond)
		_, _ = invoke(t, userOp, time.Minute, order{Key: "k", Amount: 1})
		_, _ = invoke(t, productOp, time.Minute, order{Key: "k", Note: "a"})
		if users.runs.Load() != 2 || products.runs.Load() != 2 {
			t.Errorf("runs after a minute = users %d, products %d; want 2 (expired) and 2 (one run without a key, no rerun)", users.runs.Load(), products.runs.Load())
		}
	})
}

// Powertools' response hook, and FromContext: the handler learns its key
// and fence, a replay goes through OnReplay with Replay set, the fence of
// the holder that completed it and when.
func TestReplayIsVisible(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var inHandler, inReplay idempotency.Info
		h, err := idempotency.New(idempotency.Handlers[order, string]{
			Handle: func(ctx context.Context, o order) (string, error) {
				inHandler, _ = idempotency.FromContext(ctx)
				return "answer", nil
			},
			Key: orderKey,
			OnReplay: func(ctx context.Context, o order, answer string) (string, error) {
				inReplay, _ = idempotency.FromContext(ctx)
				return answer + " (replay)", nil
			},
		}, lockcore.NewMemoryStore(), quiet())
		if err != nil {
			t.Fatal(err)
		}
		completed := time.Now()
		first, err := h(t.Context(), order{Key: "k"})
		if err != nil || first != "answer" {
			t.Fatalf("first = %q, %v", first, err)
		}
		time.Sleep(time.Second)
		again, err := h(t.Context(), order{Key: "k"})
		if err != nil || again != "answer (replay)" {
			t.Errorf("replay = %q, %v; want it through OnReplay", again, err)
		}
		if inHandler.Replay || inHandler.Key != "k" || inHandler.Fence == 0 {
			t.Errorf("handler's Info = %+v, want key k, a fence, no replay", inHandler)
		}
		want := idempotency.Info{Key: "k", Replay: true, Fence: inHandler.Fence, CompletedAt: completed}
		if inReplay != want {
			t.Errorf("replay's Info = %+v, want %+v", inReplay, want)
		}
	})
}

// Powertools: a record is at most 400 KB, "consider Redis". Here an
// answer is compressed inline up to lockcore.MaxAnswerBytes; a larger one
// goes by reference to an answer store (TestAnswerOverTheRecordGoesByReference)
// and, without one, is never silent: the record is completed without it
// (the handler does not run again), and the holder's caller and each
// duplicate get lockmw.ErrNoAnswer.
func TestAnswerSize(t *testing.T) {
	tests := []struct {
		name      string
		answer    string
		wantReply bool
	}{
		{"compressible, 1 MB", strings.Repeat("a", 1<<20), true},
		{"incompressible, over the maximum once compressed", randomText(2 * lockcore.MaxAnswerBytes), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				runs := 0
				h, err := idempotency.New(idempotency.Handlers[order, string]{
					Handle: func(context.Context, order) (string, error) { runs++; return tt.answer, nil },
					Key:    orderKey,
				}, lockcore.NewMemoryStore(), quiet())
				if err != nil {
					t.Fatal(err)
				}
				for _, who := range []string{"holder", "duplicate"} {
					got, err := h(t.Context(), order{Key: "k"})
					switch {
					case tt.wantReply && (err != nil || got != tt.answer):
						t.Errorf("%s = %d bytes, %v; want the answer", who, len(got), err)
					case !tt.wantReply && !errors.Is(err, lockmw.ErrNoAnswer):
						t.Errorf("%s = %d bytes, %v; want lockmw.ErrNoAnswer", who, len(got), err)
					}
				}
				if runs != 1 {
					t.Errorf("handler runs = %d, want 1", runs)
				}
			})
		})
	}
}

// randomText is n bytes of text that DEFLATE cannot shrink much.
func randomText(n int) string {
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+/"
	b := make([]byte, n)
	x := uint64(0x9e3779b97f4a7c15)
	for i := range b {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b[i] = alphabet[x%64]
	}
	return string(b)
}

// A bad configuration is an error from New, naming every problem; Wrap's
// handler returns it on every call.
func TestConfigErrors(t *testing.T) {
	hs := idempotency.Handlers[order, receipt]{}
	_, err := idempotency.New(hs, nil, idempotency.WithKeyPrefix("a#b"), idempotency.WithKeptErrors(2*time.Hour), nil)
	if !errors.Is(err, idempotency.ErrConfig) {
		t.Fatalf("New() = %v, want ErrConfig", err)
	}
	for _, want := range []string{"WithKeyPrefix", "WithKeptErrors", "option 2 is nil"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("New() = %v, want it to name %q", err, want)
		}
	}
	h := idempotency.Wrap(hs, lockcore.NewMemoryStore())
	if _, err := h(context.Background(), order{Key: "k"}); !errors.Is(err, idempotency.ErrConfig) {
		t.Errorf("Wrap()'s handler = %v, want ErrConfig", err)
	}
}
