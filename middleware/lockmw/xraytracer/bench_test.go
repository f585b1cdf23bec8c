package xraytracer_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-xray-sdk-go/xray"
	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/middleware/lockmw"
	"github.com/herdlock/herdlock/middleware/lockmw/xraytracer"
)

// BenchmarkWrapTracing measures a sampled invocation through lockmw.Wrap
// on the memory store with tracing "off" (no tracer) and "xray" (the SDK
// builds the facade segment from the trace header and sends the herdlock
// subsegment, JSON over UDP, to a local socket standing in for the
// daemon), so the ratio comes from one run.
func BenchmarkWrapTracing(b *testing.B) {
	b.Run("off", func(b *testing.B) { benchWrap(b, benchContext(b), nil) })
	b.Run("xray", func(b *testing.B) {
		conn, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		defer conn.Close()
		go drain(conn)
		em, err := xray.NewDefaultEmitter(conn.LocalAddr().(*net.UDPAddr))
		if err != nil {
			b.Fatal(err)
		}
		ctx, err := xray.ContextWithConfig(benchContext(b), xray.Config{Emitter: em})
		if err != nil {
			b.Fatal(err)
		}
		benchWrap(b, ctx, xraytracer.New())
	})
}

// benchContext is one sampled Lambda invocation context, reused: its
// deadline is far enough away for the whole benchmark.
func benchContext(b *testing.B) context.Context {
	ctx, cancel := context.WithTimeout(b.Context(), time.Hour)
	b.Cleanup(cancel)
	ctx = lambdacontext.NewContext(ctx, &lambdacontext.LambdaContext{AwsRequestID: "req-bench", InvokedFunctionArn: testARN})
	//lint:ignore SA1029 the key that aws-lambda-go and the X-Ray SDK use
	return context.WithValue(ctx, "x-amzn-trace-id", "Root="+traceRoot+";Parent=53995c3f42cd8ad8;Sampled=1")
}

func benchWrap(b *testing.B, ctx context.Context, tr lockmw.Tracer) {
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

// drain reads and drops datagrams until conn is closed.
func drain(conn net.PacketConn) {
	buf := make([]byte, 64<<10)
	for {
		if _, _, err := conn.ReadFrom(buf); err != nil {
			return
		}
	}
}
