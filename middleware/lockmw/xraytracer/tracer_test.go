package xraytracer_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-xray-sdk-go/xray"
	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/middleware/lockmw"
	"github.com/herdlock/herdlock/middleware/lockmw/xraytracer"
)

const testARN = "arn:aws:lambda:eu-west-1:123456789012:function:fx-rates"

// segment is the part of an X-Ray (sub)segment document the tests read.
type segment struct {
	Name        string                    `json:"name"`
	TraceID     string                    `json:"trace_id"`
	StartTime   float64                   `json:"start_time"`
	EndTime     float64                   `json:"end_time"`
	Annotations map[string]any            `json:"annotations"`
	Metadata    map[string]map[string]any `json:"metadata"`
	Subsegments []segment                 `json:"subsegments"`
	Fault       bool                      `json:"fault"`
	Cause       struct {
		Exceptions []struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"exceptions"`
	} `json:"cause"`
}

func (s segment) find(name string) (segment, bool) {
	if s.Name == name {
		return s, true
	}
	for _, c := range s.Subsegments {
		if f, ok := c.find(name); ok {
			return f, true
		}
	}
	return segment{}, false
}

// daemon is a UDP socket standing in for the X-Ray daemon, and a context
// whose segments the SDK's own emitter sends there.
func daemon(t *testing.T) (context.Context, func() []segment) {
	t.Helper()
	conn, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	em, err := xray.NewDefaultEmitter(conn.LocalAddr().(*net.UDPAddr))
	if err != nil {
		t.Fatal(err)
	}
	ctx, err := xray.ContextWithConfig(t.Context(), xray.Config{Emitter: em})
	if err != nil {
		t.Fatal(err)
	}
	read := func() []segment {
		// The SDK emits when the segment closes, before read is called:
		// the datagrams are queued; read until the queue is empty.
		var segs []segment
		buf := make([]byte, 64<<10)
		for {
			if err := conn.SetReadDeadline(time.Now().Add(300 * time.Millisecond)); err != nil {
				t.Fatal(err)
			}
			n, _, err := conn.ReadFrom(buf)
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return segs
			}
			if err != nil {
				t.Fatal(err)
			}
			_, body, _ := bytes.Cut(buf[:n], []byte("\n"))
			var s segment
			if err := json.Unmarshal(body, &s); err != nil {
				t.Fatalf("datagram %q: %v", body, err)
			}
			segs = append(segs, s)
		}
	}
	return ctx, read
}

func wrap(t *testing.T, tr lockmw.Tracer, fetch func(context.Context, string) (string, error)) func(context.Context, string) (string, error) {
	t.Helper()
	h, err := lockmw.New(fetch, lockcore.NewMemoryStore(), func(_ context.Context, k string) (string, error) { return k, nil },
		lockmw.WithLockGroup("fx"), lockmw.WithTelemetry(lockmw.Telemetry{Logger: slog.New(slog.DiscardHandler)}),
		lockmw.WithTelemetry(lockmw.Telemetry{EMFWriter: io.Discard}), lockmw.WithTelemetry(lockmw.Telemetry{Tracer: tr}))
	if err != nil {
		t.Fatal(err)
	}
	return h
}

const traceRoot = "1-5759e988-bd862e3fe1be46a994272793"

// lambdaContext is an invocation's context as aws-lambda-go makes it, with
// the trace header when traced.
func lambdaContext(ctx context.Context, traced bool) context.Context {
	ctx = lambdacontext.NewContext(ctx, &lambdacontext.LambdaContext{AwsRequestID: "req-1", InvokedFunctionArn: testARN})
	if traced {
		//lint:ignore SA1029 the key that aws-lambda-go and the X-Ray SDK use
		ctx = context.WithValue(ctx, xray.LambdaTraceHeaderKey, "Root="+traceRoot+";Parent=53995c3f42cd8ad8;Sampled=1")
	}
	return ctx
}

// invoke runs h once as a traced Lambda invocation: the SDK makes the
// facade segment of Lambda's own from the trace header, and sends each
// top-level subsegment as it closes.
func invoke(t *testing.T, ctx context.Context, h func(context.Context, string) (string, error)) error {
	t.Helper()
	_, err := h(lambdaContext(ctx, true), "EUR-USD")
	return err
}

// only returns the one document sent, which must be the herdlock
// subsegment, in the header's trace.
func only(t *testing.T, segs []segment) segment {
	t.Helper()
	if len(segs) != 1 || segs[0].Name != "herdlock" || segs[0].TraceID != traceRoot {
		t.Fatalf("documents sent %+v; want one herdlock subsegment in trace %s", segs, traceRoot)
	}
	return segs[0]
}

func TestSubsegments(t *testing.T) {
	ctx, read := daemon(t)
	begin := float64(time.Now().UnixNano()) / 1e9
	if err := invoke(t, ctx, wrap(t, xraytracer.New(), func(context.Context, string) (string, error) { return "ok", nil })); err != nil {
		t.Fatal(err)
	}
	root := only(t, read())
	if got := root.Annotations; got["lock_group"] != "fx" || got["lock_id"] != "EUR-USD" || got["outcome"] != "ACQUIRED" || got["takeover"] != false || got["polls"] != 0.0 {
		t.Errorf("herdlock annotations = %v", got)
	}
	if md := root.Metadata["herdlock"]; md["faas.invocation_id"] != "req-1" || md["cloud.resource_id"] != testARN {
		t.Errorf("herdlock metadata = %v, want the invocation id and function ARN", root.Metadata)
	}
	if root.StartTime < begin || root.EndTime < root.StartTime {
		t.Errorf("herdlock times [%v, %v], want after %v", root.StartTime, root.EndTime, begin)
	}
	acq, ok1 := root.find("lock.acquire")
	rel, ok2 := root.find("lock.release")
	if !ok1 || !ok2 {
		t.Fatalf("herdlock subsegments %+v, want lock.acquire and lock.release", root.Subsegments)
	}
	fence, _ := acq.Annotations["fence"].(float64)
	if acq.Annotations["outcome"] != "ACQUIRED" || fence <= 0 || acq.Annotations["takeover"] != false {
		t.Errorf("lock.acquire annotations = %v", acq.Annotations)
	}
	if rel.Annotations["result"] != "success" || rel.Annotations["fence"] != fence || rel.Fault {
		t.Errorf("lock.release annotations %v, fault %t; want success with fence %v", rel.Annotations, rel.Fault, fence)
	}
}

func TestSubsegmentErrorHasOnlyTheCode(t *testing.T) {
	ctx, read := daemon(t)
	boom := errors.New("upstream said: secret body")
	if err := invoke(t, ctx, wrap(t, xraytracer.New(), func(context.Context, string) (string, error) { return "", boom })); !errors.Is(err, boom) {
		t.Fatalf("h() = %v, want %v", err, boom)
	}
	root := only(t, read())
	if ex := root.Cause.Exceptions; !root.Fault || len(ex) != 1 || ex[0].Message != "error" || ex[0].Type != "error" {
		t.Errorf("herdlock fault %t, exceptions %+v; want one with the code only", root.Fault, ex)
	}
	b, _ := json.Marshal(root)
	if strings.Contains(string(b), "secret") {
		t.Errorf("the segment carries the error's text: %s", b)
	}
}

func TestNoSegmentNoHeader(t *testing.T) {
	// A context-missing strategy that panics proves that the tracer makes
	// no X-Ray call that needs a segment.
	ctx, err := xray.ContextWithConfig(t.Context(), xray.Config{ContextMissingStrategy: panicOnMissing{}})
	if err != nil {
		t.Fatal(err)
	}
	h := wrap(t, xraytracer.New(), func(context.Context, string) (string, error) { return "ok", nil })
	if out, err := h(lambdaContext(ctx, false), "k"); out != "ok" || err != nil {
		t.Errorf("h() = %q, %v; want ok, nil", out, err)
	}
}

type panicOnMissing struct{}

func (panicOnMissing) ContextMissing(v any) { panic(v) }

// TestMultiTracer records one invocation with X-Ray and a second tracer at
// once, as during a migration to OpenTelemetry: each gets the whole tree.
// (oteltracer's own tests cover the OpenTelemetry side.)
func TestMultiTracer(t *testing.T) {
	ctx, read := daemon(t)
	rec := &nameRecorder{}
	tr := lockmw.MultiTracer(nil, xraytracer.New(), rec)
	if err := invoke(t, ctx, wrap(t, tr, func(context.Context, string) (string, error) { return "ok", nil })); err != nil {
		t.Fatal(err)
	}
	root := only(t, read())
	for _, name := range []string{"lock.acquire", "lock.release"} {
		if _, ok := root.find(name); !ok {
			t.Errorf("no X-Ray subsegment %s", name)
		}
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	want := map[string]bool{"herdlock": true, "lock.acquire": true, "lock.release": true}
	if len(rec.ended) != len(want) {
		t.Fatalf("second tracer ended spans %v, want %v", rec.ended, want)
	}
	for _, name := range rec.ended {
		if !want[name] {
			t.Errorf("second tracer ended span %q, want only %v", name, want)
		}
	}
	if got := lockmw.MultiTracer(nil, nil); got != nil {
		t.Errorf("MultiTracer(nil, nil) = %v, want nil (tracing off)", got)
	}
}

// nameRecorder is a lockmw.Tracer that records the names of ended spans.
type nameRecorder struct {
	mu    sync.Mutex // guards ended
	ended []string
}

func (r *nameRecorder) Start(ctx context.Context, name string, _ time.Time) (context.Context, lockmw.Span) {
	return ctx, &namedSpan{r: r, name: name}
}

type namedSpan struct {
	r    *nameRecorder
	name string
}

func (s *namedSpan) SetAttributes(...slog.Attr) {}

func (s *namedSpan) End(error) {
	s.r.mu.Lock()
	defer s.r.mu.Unlock()
	s.r.ended = append(s.r.ended, s.name)
}

func TestSetupNilLogger(t *testing.T) {
	if tr, err := xraytracer.Setup(nil); err == nil || tr != nil {
		t.Errorf("Setup(nil) = %v, %v; want an error", tr, err)
	}
}
