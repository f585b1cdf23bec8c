package oteltracer_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sort"

	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/middleware/lockmw"
	"github.com/herdlock/herdlock/middleware/lockmw/oteltracer"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

func ExampleParseTraceHeader() {
	sc, err := oteltracer.ParseTraceHeader("Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(sc.TraceID(), sc.SpanID(), sc.IsSampled())
	// Output: 5759e988bd862e3fe1be46a994272793 53995c3f42cd8ad8 true
}

func ExampleNew() {
	// In a function: an SDK TracerProvider with an OTLP exporter, flushed
	// before each invocation returns. Here: an in-memory recorder.
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	tracer, err := oteltracer.New(tp)
	if err != nil {
		fmt.Println(err)
		return
	}
	h := lockmw.Wrap(func(ctx context.Context, pair string) (string, error) { return "rates for " + pair, nil },
		lockcore.NewMemoryStore(), func(_ context.Context, pair string) (string, error) { return pair, nil },
		lockmw.WithTelemetry(lockmw.Telemetry{Logger: slog.New(slog.DiscardHandler), EMFWriter: io.Discard, Tracer: tracer}))
	if _, err := h(context.Background(), "EUR-USD"); err != nil {
		fmt.Println(err)
		return
	}
	var names []string
	for _, s := range rec.Ended() {
		names = append(names, s.Name())
	}
	sort.Strings(names)
	fmt.Println(names)
	// Output: [herdlock lock.acquire lock.release]
}
