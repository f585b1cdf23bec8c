package lockmw_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/middleware/lockmw"
)

// attrTracer is a Tracer that keeps the attributes set on every span.
type attrTracer struct {
	mu    sync.Mutex // guards attrs
	attrs []slog.Attr
}

func (tr *attrTracer) Start(ctx context.Context, _ string, _ time.Time) (context.Context, lockmw.Span) {
	return ctx, attrSpan{tr}
}

type attrSpan struct{ tr *attrTracer }

func (s attrSpan) SetAttributes(attrs ...slog.Attr) {
	s.tr.mu.Lock()
	defer s.tr.mu.Unlock()
	s.tr.attrs = append(s.tr.attrs, attrs...)
}

func (attrSpan) End(error) {}

// trueCount is how many times key was set to true.
func (tr *attrTracer) trueCount(key string) int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	n := 0
	for _, a := range tr.attrs {
		if a.Key == key && a.Value.Kind() == slog.KindBool && a.Value.Bool() {
			n++
		}
	}
	return n
}

// A waiter that acquires the lock after its holder published an ordinary
// failure (an upstream error) makes the retry the protocol intends: it is
// told AfterFailure, not TookOver, counts LockRetryAfterFailure, not
// LockTakeover (the take-over alarm's metric), and says so in its log line
// and trace attributes. A take-over of an abandoned lease is told apart.
func TestAttemptAfterAFailureIsNotATakeover(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 10
		up := &flakyUpstream{failures: 1, err: errors.New("test: upstream 429")}
		var infos sync.Map // request id → Info of the invocations that fetched
		fetch := func(ctx context.Context, e event) (string, error) {
			if info, _ := lockmw.FromContext(ctx); info.Outcome == lockcore.Acquired {
				infos.Store(info.Revision, info)
			}
			return up.fetch(ctx, e)
		}
		var metrics, logs syncBuffer
		tr := &attrTracer{}
		logger := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
		h := lockmw.Wrap(fetch, lockcore.NewMemoryStore(), keyOf, lockmw.WithLockGroup(group),
			lockmw.WithTelemetry(lockmw.Telemetry{Logger: logger}), lockmw.WithTelemetry(lockmw.Telemetry{EMFWriter: &metrics}), lockmw.WithTelemetry(lockmw.Telemetry{Tracer: tr}),
			lockmw.WithoutCoalescing()) // every invocation waits on the store, as in sandboxes of their own

		burst(t, h, n, 10*time.Second)
		if got := len(up.callTimes()); got != 2 {
			t.Fatalf("upstream calls = %d, want 2 (the failing holder and the attempt after it)", got)
		}
		var took, after int
		infos.Range(func(_, v any) bool {
			info := v.(lockmw.Info)
			if info.TookOver {
				took++
			}
			if info.AfterFailure {
				after++
			}
			return true
		})
		if took != 0 || after != 1 {
			t.Errorf("holders told TookOver %d, AfterFailure %d; want 0, 1", took, after)
		}
		if got := sumMetric(t, metrics.String(), "LockTakeover"); got != 0 {
			t.Errorf("sum of %s = %v, want 0: no lease was abandoned", "LockTakeover", got)
		}
		if got := sumMetric(t, metrics.String(), "LockRetryAfterFailure"); got != 1 {
			t.Errorf("sum of %s = %v, want 1", "LockRetryAfterFailure", got)
		}
		if tr.trueCount("herdlock.lock.takeover") != 0 || tr.trueCount("herdlock.lock.after_failure") == 0 {
			t.Errorf("trace attributes: %s true %d times, %s true %d times; want 0 and some",
				"herdlock.lock.takeover", tr.trueCount("herdlock.lock.takeover"), "herdlock.lock.after_failure", tr.trueCount("herdlock.lock.after_failure"))
		}
		var afterLines int
		for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
			if strings.Contains(line, "abandoned") {
				t.Errorf("log line %s speaks of an abandoned lock", line)
			}
			var rec map[string]any
			if err := json.Unmarshal([]byte(line), &rec); err != nil {
				t.Fatalf("log line %q: %v", line, err)
			}
			if rec["afterFailure"] == true {
				afterLines++
				if rec["takeover"] != false {
					t.Errorf("log line %s: takeover %v, want false", line, rec["takeover"])
				}
			}
		}
		if afterLines != 1 {
			t.Errorf("invocation lines with afterFailure true = %d, want 1", afterLines)
		}
	})
}
