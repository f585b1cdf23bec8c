package oteltracer_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/lockcore/storeapi"
	"github.com/herdlock/herdlock/middleware/lockmw"
	"github.com/herdlock/herdlock/middleware/lockmw/oteltracer"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

const (
	group       = "fx"
	testARN     = "arn:aws:lambda:eu-west-1:123456789012:function:fx-rates"
	traceHeader = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"
)

// recording returns a tracer whose spans end up in the returned recorder.
func recording(t *testing.T) (*oteltracer.Tracer, *sdktrace.TracerProvider, *tracetest.SpanRecorder) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	tr, err := oteltracer.New(tp)
	if err != nil {
		t.Fatalf("New() = %v", err)
	}
	return tr, tp, rec
}

// invocation is a context as the Lambda runtime builds it for a traced
// invocation: deadline, Lambda context, trace header.
func invocation(t *testing.T, timeout time.Duration, reqID string) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	t.Cleanup(cancel)
	ctx = lambdacontext.NewContext(ctx, &lambdacontext.LambdaContext{AwsRequestID: reqID, InvokedFunctionArn: testARN})
	return lambdaHeaderContext(ctx, traceHeader)
}

func wrap(t *testing.T, store storeapi.Store, tr lockmw.Tracer, fetch func(context.Context, string) (string, error), opts ...lockmw.Option) func(context.Context, string) (string, error) {
	t.Helper()
	// The reference path (OnReleased): the other holders in these tests are
	// plain locks, which publish no inline answer.
	h, err := lockmw.NewHandlers(lockmw.Handlers[string, string]{Fetch: fetch, OnReleased: fetch}, store,
		func(_ context.Context, key string) (string, error) { return key, nil },
		append([]lockmw.Option{
			lockmw.WithLockGroup(group),
			lockmw.WithTelemetry(lockmw.Telemetry{Logger: slog.New(slog.DiscardHandler)}),
			lockmw.WithTelemetry(lockmw.Telemetry{EMFWriter: io.Discard}),
			lockmw.WithTelemetry(lockmw.Telemetry{Tracer: tr}),
		}, opts...)...)
	if err != nil {
		t.Fatalf("lockmw.NewHandlers() = %v", err)
	}
	return h
}

func ok(context.Context, string) (string, error) { return "ok", nil }

// holdElsewhere acquires id with another lock, as another invocation would.
func holdElsewhere(t *testing.T, ctx context.Context, store storeapi.Store, id string) *lockcore.Lock {
	t.Helper()
	l, err := lockcore.New(store, lockcore.Params{LockID: id, LockGroup: group, HolderName: "other", AccountID: 1, AppID: 1},
		lockcore.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatalf("lockcore.New() = %v", err)
	}
	if got, err := l.Acquire(ctx); !got || err != nil {
		t.Fatalf("Acquire() = %v, %v; want true, nil", got, err)
	}
	return l
}

// spans indexes the ended spans by name; each name must occur once.
func spans(t *testing.T, rec *tracetest.SpanRecorder) map[string]sdktrace.ReadOnlySpan {
	t.Helper()
	m := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range rec.Ended() {
		if _, dup := m[s.Name()]; dup {
			t.Errorf("span %s recorded twice", s.Name())
		}
		m[s.Name()] = s
	}
	return m
}

func names(m map[string]sdktrace.ReadOnlySpan) []string {
	var out []string
	for n := range m {
		out = append(out, n)
	}
	return out
}

func attrs(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes() {
		m[kv.Key] = kv.Value
	}
	return m
}

// checkAttrs checks that s has each of want (values compared by their
// printed form).
func checkAttrs(t *testing.T, s sdktrace.ReadOnlySpan, want map[string]any) {
	t.Helper()
	got := attrs(s)
	for k, v := range want {
		g, ok := got[attribute.Key(k)]
		if !ok || g.String() != toValue(v) {
			t.Errorf("span %s attribute %s = %v (present %t), want %v", s.Name(), k, g.String(), ok, v)
		}
	}
}

func toValue(v any) string {
	switch v := v.(type) {
	case string:
		return attribute.StringValue(v).String()
	case bool:
		return attribute.BoolValue(v).String()
	case int:
		return attribute.IntValue(v).String()
	case int64:
		return attribute.Int64Value(v).String()
	}
	return "?"
}

// checkTree checks the parents: the invocation's span under the header's
// parent, in the header's trace, and the others under it as given.
func checkTree(t *testing.T, m map[string]sdktrace.ReadOnlySpan, parents map[string]string) {
	t.Helper()
	want, _ := oteltracer.ParseTraceHeader(traceHeader)
	root, ok := m["herdlock"]
	if !ok {
		t.Fatalf("no %s span among %v", "herdlock", names(m))
	}
	if p := root.Parent(); p.SpanID() != want.SpanID() || p.TraceID() != want.TraceID() || !p.IsRemote() {
		t.Errorf("%s parent = %v, want the remote parent of the Lambda trace header %v", root.Name(), p, want)
	}
	for child, parent := range parents {
		c, p := m[child], m[parent]
		if c == nil || p == nil {
			t.Errorf("span %s or %s missing among %v", child, parent, names(m))
			continue
		}
		if c.Parent().SpanID() != p.SpanContext().SpanID() || c.SpanContext().TraceID() != want.TraceID() {
			t.Errorf("span %s: parent %s in trace %s, want %s (%s) in %s",
				child, c.Parent().SpanID(), c.SpanContext().TraceID(), parent, p.SpanContext().SpanID(), want.TraceID())
		}
		if c.StartTime().Before(p.StartTime()) || c.EndTime().After(p.EndTime()) {
			t.Errorf("span %s [%v, %v] is not within its parent %s [%v, %v]",
				child, c.StartTime(), c.EndTime(), parent, p.StartTime(), p.EndTime())
		}
	}
}

func TestAcquiredSpans(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr, _, rec := recording(t)
		h := wrap(t, lockcore.NewMemoryStore(), tr, ok)
		if out, err := h(invocation(t, 10*time.Second, "req-1"), "EUR-USD"); out != "ok" || err != nil {
			t.Fatalf("h() = %q, %v; want ok, nil", out, err)
		}
		m := spans(t, rec)
		if len(m) != 3 {
			t.Errorf("spans %v, want herdlock, lock.acquire and lock.release", names(m))
		}
		checkTree(t, m, map[string]string{"lock.acquire": "herdlock", "lock.release": "herdlock"})
		fence := attrs(m["lock.acquire"])["herdlock.lock.fence"].AsInt64()
		if fence <= 0 {
			t.Errorf("acquire fence = %d, want positive", fence)
		}
		checkAttrs(t, m["herdlock"], map[string]any{
			"herdlock.lock.group": group, "herdlock.lock.id": "EUR-USD",
			"herdlock.lock.outcome": "ACQUIRED", "herdlock.lock.fence": fence, "herdlock.lock.takeover": false, "herdlock.lock.polls": 0,
			"faas.invocation_id": "req-1", "cloud.resource_id": testARN, "cloud.account.id": "123456789012",
		})
		checkAttrs(t, m["lock.acquire"], map[string]any{"herdlock.lock.outcome": "ACQUIRED", "herdlock.lock.fence": fence, "herdlock.lock.takeover": false})
		checkAttrs(t, m["lock.release"], map[string]any{"herdlock.lock.result": "success", "herdlock.lock.fence": fence})
		for _, s := range m {
			if s.Status().Code != codes.Unset {
				t.Errorf("span %s status %v, want unset", s.Name(), s.Status())
			}
		}
	})
}

func TestReleasedSpans(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr, _, rec := recording(t)
		store := lockcore.NewMemoryStore()
		other := holdElsewhere(t, t.Context(), store, "k")
		h := wrap(t, store, tr, ok)
		done := make(chan error)
		go func() {
			_, err := h(invocation(t, 10*time.Second, "req-2"), "k")
			done <- err
		}()
		synctest.Wait() // the invocation waits for the other holder
		time.Sleep(time.Second)
		if err := other.Release(t.Context(), lockcore.Success, "ref"); err != nil {
			t.Fatalf("Release() = %v", err)
		}
		if err := <-done; err != nil {
			t.Fatalf("h() = %v", err)
		}
		m := spans(t, rec)
		if len(m) != 3 {
			t.Errorf("spans %v, want herdlock, lock.acquire and lock.wait", names(m))
		}
		checkTree(t, m, map[string]string{"lock.acquire": "herdlock", "lock.wait": "lock.acquire"})
		wait := m["lock.wait"]
		checkAttrs(t, wait, map[string]any{"herdlock.lock.outcome": "RELEASED", "herdlock.lock.takeover": false})
		if polls := attrs(wait)["herdlock.lock.polls"].AsInt64(); polls < 1 {
			t.Errorf("wait polls = %d, want at least 1", polls)
		}
		if d := wait.EndTime().Sub(wait.StartTime()); d < time.Second {
			t.Errorf("wait span lasts %v, want the second the holder held on (back-dated start)", d)
		}
		checkAttrs(t, m["lock.acquire"], map[string]any{"herdlock.lock.outcome": "RELEASED"})
		checkAttrs(t, m["herdlock"], map[string]any{"herdlock.lock.outcome": "RELEASED"})
	})
}

func TestFailedSpans(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr, _, rec := recording(t)
		store := lockcore.NewMemoryStore()
		octx, ocancel := context.WithCancel(t.Context())
		other := holdElsewhere(t, octx, store, "k") // renews, never releases in time
		h := wrap(t, store, tr, ok)
		_, err := h(invocation(t, 10*time.Second, "req-3"), "k")
		if !errors.Is(err, lockmw.ErrLockFailed) {
			t.Fatalf("h() = %v, want ErrLockFailed", err)
		}
		ocancel()
		_ = other.Release(t.Context(), lockcore.Failure, "")
		m := spans(t, rec)
		if len(m) != 3 {
			t.Errorf("spans %v, want herdlock, lock.acquire and lock.wait", names(m))
		}
		checkTree(t, m, map[string]string{"lock.acquire": "herdlock", "lock.wait": "lock.acquire"})
		checkAttrs(t, m["lock.wait"], map[string]any{"herdlock.lock.outcome": "FAILED"})
		for _, name := range []string{"herdlock", "lock.acquire"} {
			s := m[name]
			if st := s.Status(); st.Code != codes.Error || st.Description != "wait_timeout" {
				t.Errorf("span %s status %v, want Error wait_timeout", name, st)
			}
			checkAttrs(t, s, map[string]any{"error.type": "wait_timeout", "herdlock.lock.outcome": "FAILED"})
		}
	})
}

// noRelease is a store whose releases never arrive, as from a holder that
// died.
type noRelease struct{ storeapi.Store }

func (noRelease) Release(context.Context, storeapi.ReleaseRequest) (storeapi.Item, error) {
	return storeapi.Item{}, errors.New("test: release dropped")
}

func TestTakeOverSpans(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr, _, rec := recording(t)
		store := lockcore.NewMemoryStore()
		dctx, kill := context.WithCancel(t.Context())
		deadFence := holdElsewhere(t, dctx, noRelease{store}, "k").Fence()
		kill() // its renewals stop
		h := wrap(t, store, tr, ok)
		if out, err := h(invocation(t, 30*time.Second, "req-4"), "k"); out != "ok" || err != nil {
			t.Fatalf("h() = %q, %v; want ok, nil", out, err)
		}
		m := spans(t, rec)
		if len(m) != 4 {
			t.Errorf("spans %v, want herdlock, lock.acquire, lock.wait and lock.release", names(m))
		}
		checkTree(t, m, map[string]string{
			"lock.acquire": "herdlock", "lock.wait": "lock.acquire", "lock.release": "herdlock",
		})
		want := map[string]any{"herdlock.lock.outcome": "ACQUIRED", "herdlock.lock.takeover": true, "herdlock.lock.fence": deadFence + 1}
		checkAttrs(t, m["lock.acquire"], want)
		checkAttrs(t, m["herdlock"], want)
		checkAttrs(t, m["lock.wait"], map[string]any{"herdlock.lock.takeover": true})
		checkAttrs(t, m["lock.release"], map[string]any{"herdlock.lock.result": "success", "herdlock.lock.fence": deadFence + 1})
	})
}

// codedError is a handler error with a failure code, as a handler that
// classifies its upstream's answer returns.
type codedError struct{}

func (codedError) Error() string         { return "upstream said: secret body" }
func (codedError) FailureReason() string { return "upstream_429" }

func TestHandlerErrorSpans(t *testing.T) {
	tests := []struct {
		name string
		err  error
		code string
	}{
		{"plain error", errors.New("upstream said: secret body"), "error"},
		{"with a failure code", codedError{}, "upstream_429"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tr, _, rec := recording(t)
				h := wrap(t, lockcore.NewMemoryStore(), tr, func(context.Context, string) (string, error) { return "", tt.err })
				if _, err := h(invocation(t, 10*time.Second, "req-5"), "k"); !errors.Is(err, tt.err) {
					t.Fatalf("h() = %v, want %v", err, tt.err)
				}
				m := spans(t, rec)
				root := m["herdlock"]
				if st := root.Status(); st.Code != codes.Error || st.Description != tt.code {
					t.Errorf("herdlock status %v, want Error %s", st, tt.code)
				}
				checkAttrs(t, m["lock.release"], map[string]any{"herdlock.lock.result": "failure"})
				for _, s := range rec.Ended() {
					for _, kv := range s.Attributes() {
						if strings.Contains(kv.Value.String(), "secret") {
							t.Errorf("span %s attribute %s = %q carries the error's text", s.Name(), kv.Key, kv.Value.String())
						}
					}
					for _, ev := range s.Events() {
						t.Errorf("span %s has event %s; want none (no error text recorded)", s.Name(), ev.Name)
					}
				}
			})
		})
	}
}

func TestNotSampled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr, _, rec := recording(t)
		h := wrap(t, lockcore.NewMemoryStore(), tr, ok)
		ctx := lambdaHeaderContext(invocation(t, 10*time.Second, "req-6"), strings.Replace(traceHeader, "Sampled=1", "Sampled=0", 1))
		if _, err := h(ctx, "k"); err != nil {
			t.Fatalf("h() = %v", err)
		}
		if got := rec.Ended(); len(got) != 0 {
			t.Errorf("%d spans recorded for an invocation Lambda did not sample, want 0", len(got))
		}
	})
}

func TestNewNilProvider(t *testing.T) {
	if tr, err := oteltracer.New(nil); err == nil || tr != nil {
		t.Errorf("New(nil) = %v, %v; want an error", tr, err)
	}
}

var _ trace.TracerProvider = (*sdktrace.TracerProvider)(nil)

// TestCoalescedSpans runs two invocations of one key at once in this
// process: the follower shares the leader's attempt, so its herdlock span
// says coalesced and RELEASED with the leader's fence, and it has no
// acquire span of its own.
func TestCoalescedSpans(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr, _, rec := recording(t)
		release := make(chan struct{})
		fetch := func(ctx context.Context, key string) (string, error) {
			if info, _ := lockmw.FromContext(ctx); info.Outcome == lockcore.Acquired {
				<-release
			}
			return "ok", nil
		}
		h := wrap(t, lockcore.NewMemoryStore(), tr, fetch)
		leader := make(chan error)
		go func() {
			_, err := h(invocation(t, 10*time.Second, "req-leader"), "k")
			leader <- err
		}()
		synctest.Wait() // the leader holds the lock, in fetch
		follower := make(chan error)
		go func() {
			_, err := h(invocation(t, 10*time.Second, "req-follower"), "k")
			follower <- err
		}()
		synctest.Wait() // the follower waits for the leader
		close(release)
		if err := <-leader; err != nil {
			t.Fatalf("leader h() = %v", err)
		}
		if err := <-follower; err != nil {
			t.Fatalf("follower h() = %v", err)
		}
		var roots []sdktrace.ReadOnlySpan
		acquires := 0
		for _, s := range rec.Ended() {
			switch s.Name() {
			case "herdlock":
				roots = append(roots, s)
			case "lock.acquire":
				acquires++
			}
		}
		if len(roots) != 2 || acquires != 1 {
			t.Fatalf("%d herdlock and %d lock.acquire spans, want 2 and 1 (the leader's)", len(roots), acquires)
		}
		byID := map[string]sdktrace.ReadOnlySpan{}
		for _, r := range roots {
			byID[attrs(r)["faas.invocation_id"].AsString()] = r
		}
		lead, fol := byID["req-leader"], byID["req-follower"]
		if lead == nil || fol == nil {
			t.Fatalf("herdlock spans by invocation id %v", byID)
		}
		fence := attrs(lead)["herdlock.lock.fence"].AsInt64()
		checkAttrs(t, fol, map[string]any{"herdlock.lock.outcome": "RELEASED", "herdlock.lock.coalesced": true, "herdlock.lock.fence": fence})
		if _, has := attrs(lead)["herdlock.lock.coalesced"]; has {
			t.Errorf("leader's herdlock span has %s, want it only on the follower", "herdlock.lock.coalesced")
		}
	})
}
