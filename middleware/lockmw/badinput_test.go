package lockmw_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/middleware/lockmw"
)

// TestBadInputIsNotAnAttempt: a Fetch error matching ErrBadInput (a
// client's malformed request) frees the lock without publishing a
// failure: with one attempt per episode, the next valid invocation is not
// refused with the shared failure but runs its own Fetch, and the item
// counts no failed attempt.
func TestBadInputIsNotAnAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := lockcore.NewMemoryStore()
		fetches := 0
		h, err := lockmw.New(func(_ context.Context, e event) (string, error) {
			fetches++
			if e.Key == "" {
				return "", errors.New("unreachable")
			}
			if strings.HasPrefix(e.Req, "bad") {
				return "", fmt.Errorf("%w: amount is not a number", lockmw.ErrBadInput)
			}
			return "rate", nil
		}, store, keyOf, options(lockmw.WithLockOptions(lockcore.WithFailureEpisode(lockcore.FailureEpisode{MaxAttempts: 1})))...)
		if err != nil {
			t.Fatal(err)
		}
		for i, tc := range []struct {
			payload string
			wantErr error
		}{
			{"bad 1", lockmw.ErrBadInput},
			{"bad 2", lockmw.ErrBadInput},
			{"good", nil},
		} {
			ctx, cancel := invocationContext(t.Context(), 10*time.Second, fmt.Sprint("req-", i))
			out, err := h(ctx, event{Key: "EUR-USD", Req: tc.payload})
			cancel()
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && out != "rate") {
				t.Errorf("invocation %d (%s) = %q, %v; want %v", i, tc.payload, out, err, tc.wantErr)
			}
		}
		if fetches != 3 {
			t.Errorf("Fetch ran %d times, want 3 (every request its own)", fetches)
		}
		if it := item(t, store, lockcore.Key{Group: group, ID: "EUR-USD"}); it.Result != lockcore.Success || it.Failures != 0 {
			t.Errorf("item result %q with %d failures, want success and none counted", it.Result, it.Failures)
		}
	})
}

// TestBadInputKeyIsLoggedAtWarn: a key function's error matching
// ErrBadInput is the client's fault: the line is Warn, not Error.
func TestBadInputKeyIsLoggedAtWarn(t *testing.T) {
	var logs syncBuffer
	h, err := lockmw.New(func(context.Context, event) (string, error) { return "", nil }, lockcore.NewMemoryStore(),
		func(context.Context, event) (string, error) { return "", fmt.Errorf("%w: no pair", lockmw.ErrBadInput) },
		options(lockmw.WithTelemetry(lockmw.Telemetry{Logger: slog.New(slog.NewJSONHandler(&logs, nil))}))...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := invocationContext(t.Context(), 10*time.Second, "req-1")
	defer cancel()
	if _, err := h(ctx, event{}); !errors.Is(err, lockmw.ErrKey) {
		t.Fatalf("invocation = %v, want ErrKey", err)
	}
	if !strings.Contains(logs.String(), `"level":"WARN"`) || strings.Contains(logs.String(), `"level":"ERROR"`) {
		t.Errorf("log:\n%s\nwant one Warn line", logs.String())
	}
}

// TestLongLockIDIsCutInTheLog: a lock id comes from the client and may be
// 2 KiB long; the log line carries its first 128 bytes and its length.
func TestLongLockIDIsCutInTheLog(t *testing.T) {
	var logs syncBuffer
	long := strings.Repeat("k", 2000)
	h, err := lockmw.New(func(context.Context, event) (string, error) {
		return "", fmt.Errorf("%w: bad body", lockmw.ErrBadInput)
	}, lockcore.NewMemoryStore(), keyOf, options(lockmw.WithTelemetry(lockmw.Telemetry{Logger: slog.New(slog.NewJSONHandler(&logs, nil))}))...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := invocationContext(t.Context(), 10*time.Second, "req-1")
	defer cancel()
	_, _ = h(ctx, event{Key: long})
	if strings.Contains(logs.String(), strings.Repeat("k", 129)) || !strings.Contains(logs.String(), "(2000 bytes)") {
		t.Errorf("log carries the whole id or not its length:\n%.600s", logs.String())
	}
	if strings.Contains(logs.String(), `"level":"ERROR"`) {
		t.Errorf("a bad request logged at Error:\n%.600s", logs.String())
	}
}
