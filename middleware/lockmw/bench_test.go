package lockmw_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/middleware/lockmw"
)

func benchHandler(ctx context.Context, e event) (string, error) { return e.Key, nil }

// benchContext is one Lambda-like invocation context, reused: its deadline
// is far enough away for the whole benchmark.
func benchContext(b *testing.B) context.Context {
	ctx, cancel := invocationContext(b.Context(), time.Hour, "req-bench")
	b.Cleanup(cancel)
	return ctx
}

// BenchmarkBareHandler is the baseline for BenchmarkWrap.
func BenchmarkBareHandler(b *testing.B) {
	ctx := benchContext(b)
	e := event{Key: "EUR-USD"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := benchHandler(ctx, e); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWrap measures Wrap's overhead per invocation on the memory store:
// acquire, hold, release, one log line (JSON to io.Discard) and one EMF
// flush (to io.Discard), tracing off.
func BenchmarkWrap(b *testing.B) {
	h, err := lockmw.New(benchHandler, lockcore.NewMemoryStore(), keyOf,
		lockmw.WithLockGroup("bench"),
		lockmw.WithTelemetry(lockmw.Telemetry{Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))}),
		lockmw.WithTelemetry(lockmw.Telemetry{EMF: newTestMetrics(b, io.Discard)}),
	)
	if err != nil {
		b.Fatal(err)
	}
	ctx := benchContext(b)
	e := event{Key: "EUR-USD"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := h(ctx, e); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLockcoreOnly is the part of BenchmarkWrap that lockcore does:
// New, TryAcquireElseWaitForRelease and Release on the memory store.
func BenchmarkLockcoreOnly(b *testing.B) {
	store := lockcore.NewMemoryStore()
	ctx := benchContext(b)
	p := lockcore.Params{LockID: "EUR-USD", LockGroup: "bench", HolderName: "bench", AccountID: 1, AppID: 1}
	log := lockcore.WithLogger(slog.New(slog.DiscardHandler))
	b.ReportAllocs()
	for b.Loop() {
		l, err := lockcore.New(store, p, log)
		if err != nil {
			b.Fatal(err)
		}
		if res, err := l.TryAcquireElseWaitForRelease(ctx); err != nil || res.Outcome != lockcore.Acquired {
			b.Fatal(res, err)
		}
		if err := l.Release(ctx, lockcore.Success, ""); err != nil {
			b.Fatal(err)
		}
	}
}
