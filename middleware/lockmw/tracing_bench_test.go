package lockmw_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"testing"

	"github.com/aws/aws-xray-sdk-go/xray"
	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/middleware/lockmw"
	"github.com/herdlock/herdlock/middleware/lockmw/oteltracer"
	"github.com/herdlock/herdlock/middleware/lockmw/xraytracer"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// benchTraceHeader is a sampled Lambda trace header, the one every traced
// benchmark invocation carries.
const benchTraceHeader = "Root=" + childTraceRoot + ";Parent=53995c3f42cd8ad8;Sampled=1"

// BenchmarkWrapTracing is BenchmarkWrap with each tracer, for a sampled
// invocation: "off" (no tracer), "xray" (xraytracer: the SDK builds the
// facade segment from the trace header and sends the herdlock subsegment,
// JSON over UDP, to a local socket standing in for the daemon), and "otel"
// (oteltracer on the OpenTelemetry SDK with a batch span processor and a
// no-op exporter).
func BenchmarkWrapTracing(b *testing.B) {
	b.Run("off", func(b *testing.B) { benchWrapWith(b, benchContext(b), nil) })
	b.Run("xray", func(b *testing.B) {
		daemon, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		defer daemon.Close()
		go drain(daemon)
		em, err := xray.NewDefaultEmitter(daemon.LocalAddr().(*net.UDPAddr))
		if err != nil {
			b.Fatal(err)
		}
		ctx, err := xray.ContextWithConfig(benchContext(b), xray.Config{Emitter: em})
		if err != nil {
			b.Fatal(err)
		}
		benchWrapWith(b, withTraceHeader(ctx, benchTraceHeader), xraytracer.New())
	})
	b.Run("otel", func(b *testing.B) {
		tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
		defer func() { _ = tp.Shutdown(context.Background()) }()
		tr, err := oteltracer.New(tp)
		if err != nil {
			b.Fatal(err)
		}
		benchWrapWith(b, withTraceHeader(benchContext(b), benchTraceHeader), tr)
	})
}

func benchWrapWith(b *testing.B, ctx context.Context, tr lockmw.Tracer) {
	h, err := lockmw.New(benchHandler, lockcore.NewMemoryStore(), keyOf,
		lockmw.WithLockGroup("bench"),
		lockmw.WithLogger(slog.New(slog.NewJSONHandler(io.Discard, nil))),
		lockmw.WithMetrics(newTestMetrics(b, io.Discard)),
		lockmw.WithTracer(tr),
	)
	if err != nil {
		b.Fatal(err)
	}
	e := event{Key: "EUR-USD"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := h(ctx, e); err != nil {
			b.Fatal(err)
		}
	}
}

func withTraceHeader(ctx context.Context, h string) context.Context {
	//lint:ignore SA1029 the key that aws-lambda-go and the X-Ray SDK use
	return context.WithValue(ctx, "x-amzn-trace-id", h)
}

// drain reads and drops datagrams until conn is closed.
func drain(conn net.PacketConn) {
	buf := make([]byte, 64<<10)
	for {
		if _, _, err := conn.ReadFrom(buf); err != nil {
			return
		}
	}
}
