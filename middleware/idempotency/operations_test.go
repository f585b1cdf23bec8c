package idempotency_test

import (
	"context"
	"errors"
	"log/slog"
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
			append(shared, idempotency.WithKeys(idempotency.Keys{Prefix: "users"}), idempotency.WithRetention(idempotency.Retention{Answers: time.Minute}))...)
		if err != nil {
			t.Fatal(err)
		}
		productOp, err := idempotency.New(idempotency.Handlers[order, receipt]{Handle: products.handle, Key: orderKey,
			Payload: func(o order) any { return o.Note }}, store,
			append(shared, idempotency.WithKeys(idempotency.Keys{Prefix: "products"}), idempotency.WithKeys(idempotency.Keys{Optional: true}))...)
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
		if _, err := invoke(t, userOp, time.Minute, order{}); !errors.Is(err, lockmw.ErrKey) {
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
	_, err := idempotency.New(hs, nil, idempotency.WithKeys(idempotency.Keys{Prefix: "a#b"}), idempotency.WithRetention(idempotency.Retention{Errors: 2 * time.Hour}), nil)
	if !errors.Is(err, lockcore.ErrConfig) {
		t.Fatalf("New() = %v, want ErrConfig", err)
	}
	for _, want := range []string{"WithKeys", "WithRetention", "option 2 is nil"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("New() = %v, want it to name %q", err, want)
		}
	}
	h := idempotency.Wrap(hs, lockcore.NewMemoryStore())
	if _, err := h(context.Background(), order{Key: "k"}); !errors.Is(err, lockcore.ErrConfig) {
		t.Errorf("Wrap()'s handler = %v, want ErrConfig", err)
	}
}

// The layer's own settings given to WithLockmwOptions (the retention as
// the fresh-success window, the TTL, the largest inline answer) are
// configuration errors naming them, not settings it overrides silently;
// the rest of the lock's options are taken.
func TestLayerSettingsInLockmwOptionsAreRefused(t *testing.T) {
	hs := idempotency.Handlers[order, receipt]{
		Handle: func(context.Context, order) (receipt, error) { return receipt{}, nil },
		Key:    func(_ context.Context, o order) (string, error) { return o.Key, nil },
	}
	tests := []struct {
		name string
		opt  lockmw.Option
		want string // "" for no error
	}{
		{"fresh success", lockmw.WithLockOptions(lockcore.WithFreshSuccess(time.Minute)), "lockcore.WithFreshSuccess"},
		{"fresh success of zero", lockmw.WithLockOptions(lockcore.WithFreshSuccess(0)), "lockcore.WithFreshSuccess"},
		{"ttl", lockmw.WithLockOptions(lockcore.WithLease(time.Second), lockcore.WithTTL(time.Hour)), "lockcore.WithTTL"},
		{"largest inline answer", lockmw.WithAnswers(lockmw.Answers{MaxInlineBytes: 1024}), "Answers.MaxInlineBytes"},
		{"maximum wait and lease", lockmw.WithLockOptions(lockcore.WithMaxWait(time.Second), lockcore.WithLease(time.Second)), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := idempotency.New(hs, lockcore.NewMemoryStore(), quiet(), idempotency.WithLockmwOptions(tt.opt))
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("New() = %v, want no error", err)
			case tt.want != "" && (!errors.Is(err, lockcore.ErrConfig) || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("New() = %v, want ErrConfig naming %s", err, tt.want)
			}
		})
	}
}

// A prefix with white space around it is a configuration error: lockmw
// trims a lock id, so the prefix " charge" would name the records of the
// operation "charge" and replay its answers.
func TestPrefixWithSurroundingWhiteSpace(t *testing.T) {
	hs := idempotency.Handlers[order, receipt]{Handle: (&counter{}).handle, Key: orderKey}
	tests := []struct {
		name string
		opt  idempotency.Option
		want string
	}{
		{"prefix with a leading space", idempotency.WithKeys(idempotency.Keys{Prefix: " charge"}), "WithKeys"},
		{"prefix with a trailing space", idempotency.WithKeys(idempotency.Keys{Prefix: "charge "}), "WithKeys"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := idempotency.New(hs, lockcore.NewMemoryStore(), quiet(), tt.opt)
			if !errors.Is(err, lockcore.ErrConfig) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("New() = %v, want ErrConfig naming %s", err, tt.want)
			}
		})
	}
}

// A handler from Wrap or WrapHTTP with a bad configuration writes its
// one Error line where the invocations' lines go: the logger given with
// lockmw.Telemetry's Logger, not the process's default logger.
func TestConfigErrorIsLoggedToTheConfiguredLogger(t *testing.T) {
	tests := []struct {
		name string
		call func(opts ...idempotency.Option) error
	}{
		{"Wrap", func(opts ...idempotency.Option) error {
			_, err := idempotency.Wrap(idempotency.Handlers[order, receipt]{Handle: (&counter{}).handle, Key: orderKey},
				lockcore.NewMemoryStore(), opts...)(context.Background(), order{Key: "k"})
			return err
		}},
		{"WrapHTTP", func(opts ...idempotency.Option) error {
			_, err := idempotency.WrapHTTP((&createOrder{}).handle, lockcore.NewMemoryStore(), opts...)(context.Background(), post("/orders", `"k"`, "{}"))
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs logBuffer
			err := tt.call(idempotency.WithLockmwOptions(lockmw.WithTelemetry(lockmw.Telemetry{Logger: slog.New(slog.NewJSONHandler(&logs, nil))})),
				idempotency.WithKeys(idempotency.Keys{Prefix: "a#b"}))
			if !errors.Is(err, lockcore.ErrConfig) {
				t.Fatalf("handler = %v, want ErrConfig", err)
			}
			if !strings.Contains(logs.String(), `"level":"ERROR"`) || !strings.Contains(logs.String(), "invalid configuration") {
				t.Errorf("the configured logger has no Error line of the configuration error: %q", logs.String())
			}
		})
	}
}
