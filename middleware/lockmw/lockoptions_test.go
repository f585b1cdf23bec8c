package lockmw_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/herdlock/herdlock/internal/faultstore"
	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/middleware/lockmw"
)

// countingMetrics is a lockcore.Metrics that counts what it gets by name.
type countingMetrics struct {
	mu sync.Mutex
	n  map[string]int
}

func (m *countingMetrics) AddMetric(name, _ string, _ float64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.n == nil {
		m.n = map[string]int{}
	}
	m.n[name]++
}

func (m *countingMetrics) count(name string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.n[name]
}

// A logger given with lockcore.WithLogger in WithLockOptions gets the
// lock's lines, with the invocation's request id; the middleware does not
// replace it with its own.
func TestLockOptionsLoggerGetsTheLocksLines(t *testing.T) {
	var lockLines syncBuffer
	userLog := slog.New(slog.NewJSONHandler(&lockLines, &slog.HandlerOptions{Level: slog.LevelDebug}))
	h, err := lockmw.New(func(context.Context, event) (string, error) { return "ok", nil },
		lockcore.NewMemoryStore(), keyOf, lockmw.WithLockGroup(group), lockmw.WithTelemetry(lockmw.Telemetry{Logger: discardLogger()}),
		lockmw.WithTelemetry(lockmw.Telemetry{EMFWriter: &syncBuffer{}}), lockmw.WithLockOptions(lockcore.WithLogger(userLog)))
	if err != nil {
		t.Fatalf("New() = %v", err)
	}
	ctx, cancel := invocationContext(context.Background(), 10*time.Second, "req-logger")
	defer cancel()
	if _, err := h(ctx, event{Key: "k"}); err != nil {
		t.Fatalf("invocation = %v", err)
	}
	got := lockLines.String()
	if !strings.Contains(got, `"msg":"lock acquired"`) || !strings.Contains(got, `"requestId":"req-logger"`) {
		t.Fatalf("the lockcore.WithLogger logger got %q; want the lock's \"lock acquired\" line with the request id", got)
	}
}

// Metrics given with lockcore.WithMetrics in WithLockOptions get the
// lock's measurements, and the invocation's metrics document still has
// them too.
func TestLockOptionsMetricsGetTheLocksMeasurements(t *testing.T) {
	user := &countingMetrics{}
	var doc syncBuffer
	h, err := lockmw.New(func(context.Context, event) (string, error) { return "ok", nil },
		lockcore.NewMemoryStore(), keyOf, lockmw.WithLockGroup(group), lockmw.WithTelemetry(lockmw.Telemetry{Logger: discardLogger()}),
		lockmw.WithTelemetry(lockmw.Telemetry{EMFWriter: &doc}), lockmw.WithLockOptions(lockcore.WithMetrics(user)))
	if err != nil {
		t.Fatalf("New() = %v", err)
	}
	ctx, cancel := invocationContext(context.Background(), 10*time.Second, "req-metrics")
	defer cancel()
	if _, err := h(ctx, event{Key: "k"}); err != nil {
		t.Fatalf("invocation = %v", err)
	}
	for _, name := range []string{"LockAcquisitionSuccess", "LockHoldDuration", "LockReleaseDuration"} {
		if got := user.count(name); got != 1 {
			t.Errorf("the lockcore.WithMetrics metrics got %s %d times, want 1", name, got)
		}
	}
	docs := emfDocs(t, doc.String())
	if len(docs) != 1 || docs[0]["LockAcquisitionSuccess"] != 1.0 {
		t.Fatalf("metrics documents = %v; want one with %s 1", docs, "LockAcquisitionSuccess")
	}
}

// The holder's release, when its handler returns with time to spare,
// may take as long as a lease by default (a slow table still gets the
// publication), and a release timeout given with lockcore.WithStoreCalls
// in WithLockOptions bounds it instead: against a store that never
// answers, the invocation returns when that budget ends. An automatic
// release timeout bounds only the lock's own release, not the holder's.
func TestLockOptionsReleaseTimeoutBoundsTheRelease(t *testing.T) {
	tests := []struct {
		name      string
		opts      []lockcore.Option
		wantAfter time.Duration // from the handler's return to the invocation's
	}{
		{"default: a lease", nil, lockcore.DefaultLease},
		{"lockcore.WithLease(3s)", []lockcore.Option{lockcore.WithLease(3 * time.Second)}, 3 * time.Second},
		{"lockcore.StoreCalls{ReleaseTimeout: 300ms}", []lockcore.Option{lockcore.WithStoreCalls(lockcore.StoreCalls{ReleaseTimeout: 300 * time.Millisecond})}, 300 * time.Millisecond},
		{"lockcore.StoreCalls{AutoReleaseTimeout: 300ms}", []lockcore.Option{lockcore.WithStoreCalls(lockcore.StoreCalls{AutoReleaseTimeout: 300 * time.Millisecond})}, lockcore.DefaultLease},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var returned time.Time
				h, err := lockmw.New(func(context.Context, event) (string, error) {
					returned = time.Now()
					return "ok", nil
				}, faultstore.UnansweredReleases{Store: lockcore.NewMemoryStore()}, keyOf, lockmw.WithLockGroup(group),
					lockmw.WithTelemetry(lockmw.Telemetry{Logger: discardLogger()}), lockmw.WithTelemetry(lockmw.Telemetry{EMFWriter: &syncBuffer{}}),
					lockmw.WithSafetyMargin(2*time.Second), lockmw.WithLockOptions(tt.opts...))
				if err != nil {
					t.Fatalf("New() = %v", err)
				}
				ctx, cancel := invocationContext(t.Context(), 30*time.Second, "req-release")
				defer cancel()
				if _, err := h(ctx, event{Key: "k"}); err != nil {
					t.Fatalf("invocation = %v; want the handler's answer (a failed release is logged)", err)
				}
				if got := time.Since(returned); got != tt.wantAfter {
					t.Fatalf("the invocation returned %v after its handler; want %v, the release timeout", got, tt.wantAfter)
				}
			})
		})
	}
}

// Against a store that never answers, the holder's release ends by the
// deadline less a quarter of the margin when that comes before a lease
// is up, and the release the lock makes by itself at the maximum hold
// (a handler that outlasts it) within three quarters of the margin: both
// leave the last quarter to the metrics flush.
func TestHolderReleaseLeavesTheFlushItsQuarter(t *testing.T) {
	tests := []struct {
		name     string
		budget   time.Duration // the invocation's
		work     time.Duration // the handler's, ignoring its context
		returnAt time.Duration // the invocation's return, from its start
	}{
		{"handler returns with 4s left", 4 * time.Second, 0, 4*time.Second - 500*time.Millisecond},
		{"handler outlasts the maximum hold", 30 * time.Second, 29 * time.Second, 30*time.Second - 500*time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var lockEnded time.Time
				h, err := lockmw.New(func(ctx context.Context, _ event) (string, error) {
					time.Sleep(tt.work)
					if ctx.Err() != nil {
						lockEnded = time.Now()
					}
					return "ok", nil
				}, faultstore.UnansweredReleases{Store: lockcore.NewMemoryStore()}, keyOf, lockmw.WithLockGroup(group),
					lockmw.WithTelemetry(lockmw.Telemetry{Logger: discardLogger(), EMFWriter: &syncBuffer{}}),
					lockmw.WithSafetyMargin(2*time.Second))
				if err != nil {
					t.Fatalf("New() = %v", err)
				}
				start := time.Now()
				ctx, cancel := invocationContext(t.Context(), tt.budget, "req-flush")
				defer cancel()
				_, _ = h(ctx, event{Key: "k"})
				if got := time.Since(start); got > tt.returnAt {
					t.Errorf("the invocation returned %v after its start; want by %v (the deadline %v less a quarter of the margin)", got, tt.returnAt, tt.budget)
				}
				if tt.work > 0 && lockEnded.IsZero() {
					t.Errorf("the handler's context had not ended after %v: the maximum hold did not end it", tt.work)
				}
			})
		})
	}
}

// A release timeout that does not end within the safety margin is a
// configuration error at New that names it: the release would run past
// the deadline.
func TestLockOptionsReleaseTimeoutPastTheMarginIsRefused(t *testing.T) {
	_, err := lockmw.New(func(context.Context, event) (string, error) { return "ok", nil },
		lockcore.NewMemoryStore(), keyOf, lockmw.WithTelemetry(lockmw.Telemetry{Logger: discardLogger()}), lockmw.WithSafetyMargin(time.Second),
		lockmw.WithLockOptions(lockcore.WithStoreCalls(lockcore.StoreCalls{ReleaseTimeout: time.Second})))
	if !errors.Is(err, lockcore.ErrConfig) || !strings.Contains(err.Error(), "lockcore.StoreCalls.ReleaseTimeout") {
		t.Fatalf("New() = %v; want a configuration error matching lockcore.ErrConfig that names lockcore.StoreCalls.ReleaseTimeout", err)
	}
}
