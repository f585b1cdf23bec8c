package oteltracer_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/middleware/lockmw"
	"github.com/herdlock/herdlock/middleware/lockmw/oteltracer"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// BenchmarkWrapTracing measures a sampled invocation through lockmw.Wrap
// on the memory store with tracing "off" (no tracer) and "otel"
// (oteltracer on the OpenTelemetry SDK with a batch span processor and a
// no-op exporter), so the ratio comes from one run.
func BenchmarkWrapTracing(b *testing.B) {
	b.Run("off", func(b *testing.B) { benchWrap(b, nil) })
	b.Run("otel", func(b *testing.B) {
		tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
		defer func() { _ = tp.Shutdown(context.Background()) }()
		tr, err := oteltracer.New(tp)
		if err != nil {
			b.Fatal(err)
		}
		benchWrap(b, tr)
	})
}

func benchWrap(b *testing.B, tr lockmw.Tracer) {
	ctx, cancel := context.WithTimeout(b.Context(), time.Hour)
	defer cancel()
	ctx = lambdacontext.NewContext(ctx, &lambdacontext.LambdaContext{AwsRequestID: "req-bench", InvokedFunctionArn: testARN})
	ctx = lambdaHeaderContext(ctx, traceHeader)
	h, err := lockmw.New(func(_ context.Context, k string) (string, error) { return k, nil }, lockcore.NewMemoryStore(),
		func(_ context.Context, k string) (string, error) { return k, nil },
		lockmw.WithLockGroup("bench"), lockmw.WithTelemetry(lockmw.Telemetry{Logger: slog.New(slog.DiscardHandler)}),
		lockmw.WithTelemetry(lockmw.Telemetry{EMFWriter: io.Discard}), lockmw.WithTelemetry(lockmw.Telemetry{Tracer: tr}))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := h(ctx, "EUR-USD"); err != nil {
			b.Fatal(err)
		}
	}
}
