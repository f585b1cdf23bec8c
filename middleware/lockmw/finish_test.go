package lockmw_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/lockcore/storeapi"
	"github.com/herdlock/herdlock/middleware/lockmw"
)

// logLines parses the middleware's JSON log lines in s (lockcore's own
// lines, at Debug, are left out).
func logLines(t *testing.T, s string) []map[string]any {
	t.Helper()
	var lines []map[string]any
	for line := range strings.SplitSeq(strings.TrimSpace(s), "\n") {
		if line == "" {
			continue
		}
		var l map[string]any
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatalf("log line %q is not JSON: %v", line, err)
		}
		if msg, _ := l["msg"].(string); strings.HasPrefix(msg, "lockmw: ") {
			lines = append(lines, l)
		}
	}
	return lines
}

func failing(context.Context, event) (string, error) { return "", errors.New("upstream 503") }

func panicking(context.Context, event) (string, error) { panic("upstream parser") }

func succeeding(context.Context, event) (string, error) { return "ok", nil }

// TestOneDocumentAndOneLogLine: every invocation, whatever its outcome and
// also when it returns before trying the lock, writes exactly one EMF
// document and one log line, and both name the outcome.
func TestOneDocumentAndOneLogLine(t *testing.T) {
	tests := []struct {
		name        string
		hs          lockmw.Handlers[event, string]
		key         func(context.Context, event) (string, error)
		timeout     time.Duration // 0: no Lambda context at all
		published   bool          // another holder published success just before
		acquireErr  error
		wantOutcome string
		wantLevel   string
		wantErr     error // nil: no error
	}{
		{"acquired", lockmw.Handlers[event, string]{Fetch: succeeding}, keyOf, time.Minute, false, nil, "ACQUIRED", "DEBUG", nil},
		{"released", lockmw.Handlers[event, string]{Fetch: succeeding, OnReleased: succeeding}, keyOf, time.Minute, true, nil, "RELEASED", "DEBUG", nil},
		{"released without an answer", lockmw.Handlers[event, string]{Fetch: succeeding}, keyOf, time.Minute, true, nil, "RELEASED", "WARN", lockmw.ErrNoAnswer},
		{"failed", lockmw.Handlers[event, string]{Fetch: succeeding}, keyOf, time.Minute, false, errors.New("throttled"), "FAILED", "WARN", lockmw.ErrLockFailed},
		{"handler error", lockmw.Handlers[event, string]{Fetch: failing}, keyOf, time.Minute, false, nil, "ACQUIRED", "WARN", errors.New("upstream 503")},
		{"no time left", lockmw.Handlers[event, string]{Fetch: succeeding}, keyOf, time.Second, false, nil, "NOT_TRIED", "ERROR", lockcore.ErrNoTimeLeft},
		{"key error", lockmw.Handlers[event, string]{Fetch: succeeding}, failing, time.Minute, false, nil, "NOT_TRIED", "ERROR", lockmw.ErrKey},
		{"blank static key", lockmw.Handlers[event, string]{Fetch: succeeding}, lockmw.StaticKey[event](""), time.Minute, false, nil, "NOT_TRIED", "ERROR", lockmw.ErrKey},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				mem := lockcore.NewMemoryStore()
				if tt.published {
					other := holdElsewhere(t, t.Context(), mem, "k")
					if err := other.Release(t.Context(), lockcore.Success, "ref"); err != nil {
						t.Fatalf("Release() = %v", err)
					}
				}
				fs := &faultStore{Store: mem, acquireErr: tt.acquireErr}
				var metrics, logs syncBuffer
				h, err := lockmw.NewHandlers(tt.hs, fs, tt.key, lockmw.WithLockGroup(group),
					lockmw.WithTelemetry(lockmw.Telemetry{EMF: newTestMetrics(t, &metrics)}),
					lockmw.WithTelemetry(lockmw.Telemetry{Logger: slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}),
					lockmw.WithLockOptions(lockcore.WithFreshSuccess(time.Minute)))
				if err != nil {
					t.Fatalf("NewHandlers() = %v", err)
				}
				ctx := t.Context()
				if tt.timeout > 0 {
					var cancel context.CancelFunc
					ctx, cancel = invocationContext(ctx, tt.timeout, "req-1")
					defer cancel()
				}
				_, err = h(ctx, event{Key: "k"})
				if (err == nil) != (tt.wantErr == nil) || (tt.wantErr != nil && !errors.Is(err, tt.wantErr) && err.Error() != tt.wantErr.Error()) {
					t.Errorf("h() = %v, want %v", err, tt.wantErr)
				}

				docs := emfDocs(t, metrics.String())
				if len(docs) != 1 {
					t.Fatalf("%d EMF documents, want 1:\n%s", len(docs), metrics.String())
				}
				if docs[0]["lockOutcome"] != tt.wantOutcome || docs[0]["lockGroup"] != group {
					t.Errorf("EMF document %v; want lockOutcome %s, lockGroup %s", docs[0], tt.wantOutcome, group)
				}
				notTried, _ := docs[0]["LockNotTried"].(float64)
				if want := tt.wantOutcome == "NOT_TRIED"; (notTried == 1) != want {
					t.Errorf("EMF %s = %v, want it 1 exactly when not tried (%v)", "LockNotTried", docs[0]["LockNotTried"], want)
				}
				lines := logLines(t, logs.String())
				if len(lines) != 1 {
					t.Fatalf("%d log lines, want 1:\n%s", len(lines), logs.String())
				}
				if lines[0]["outcome"] != tt.wantOutcome || lines[0]["level"] != tt.wantLevel {
					t.Errorf("log line %v; want outcome %s at %s", lines[0], tt.wantOutcome, tt.wantLevel)
				}
				if _, has := lines[0]["error"]; has != (tt.wantErr != nil) {
					t.Errorf("log line %v has an error %v, want %v", lines[0], has, tt.wantErr != nil)
				}
			})
		})
	}
}

// TestPanicOneDocumentAndOneLogLine: a panicking handler's invocation also
// writes one document and one line, before the panic goes on.
func TestPanicOneDocumentAndOneLogLine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var metrics, logs syncBuffer
		h := mustNew(t, panicking, lockcore.NewMemoryStore(), lockmw.WithLockGroup(group),
			lockmw.WithTelemetry(lockmw.Telemetry{EMF: newTestMetrics(t, &metrics)}),
			lockmw.WithTelemetry(lockmw.Telemetry{Logger: slog.New(slog.NewJSONHandler(&logs, nil))}))
		ctx, cancel := invocationContext(t.Context(), time.Minute, "req")
		defer cancel()
		func() {
			defer func() { _ = recover() }()
			_, _ = h(ctx, event{Key: "k"})
		}()
		if docs := emfDocs(t, metrics.String()); len(docs) != 1 {
			t.Errorf("%d EMF documents, want 1:\n%s", len(docs), metrics.String())
		}
		lines := logLines(t, logs.String())
		if len(lines) != 1 || lines[0]["error"] != "lockmw: handler panicked" {
			t.Errorf("log lines %v; want one that says the handler panicked", lines)
		}
	})
}

// renewCounter counts the renewals that reach the store.
type renewCounter struct {
	storeapi.Store
	renewals atomic.Int32
}

func (s *renewCounter) Renew(ctx context.Context, req storeapi.RenewRequest) (storeapi.Item, error) {
	s.renewals.Add(1)
	return s.Store.Renew(ctx, req)
}

// TestResultRefPanicReleasesAsFailure: when the result-reference function
// panics, after Fetch returned, the lock is released as failure before the
// panic goes on, and no renewal follows.
func TestResultRefPanicReleasesAsFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &renewCounter{Store: lockcore.NewMemoryStore()}
		key := lockcore.Key{Group: group, ID: "k"}
		h := mustNewHandlers(t, lockmw.Handlers[event, string]{
			Fetch:     succeeding,
			ResultRef: func(string) string { panic("bad reference") },
		}, store, options()...)
		ctx, cancel := invocationContext(t.Context(), time.Minute, "req")
		defer cancel()
		got := func() (r any) {
			defer func() { r = recover() }()
			_, _ = h(ctx, event{Key: "k"})
			return nil
		}()
		if got != "bad reference" {
			t.Errorf("recovered %v, want the ResultRef panic", got)
		}
		if it := item(t, store, key); !it.Released || it.Result != lockcore.Failure {
			t.Errorf("item when the panic reached the caller = %+v; want released with failure", it)
		}
		before := store.renewals.Load()
		time.Sleep(5 * lockcore.DefaultLease)
		if after := store.renewals.Load(); after != before {
			t.Errorf("renewals after the panic: %d, want none", after-before)
		}
	})
}
