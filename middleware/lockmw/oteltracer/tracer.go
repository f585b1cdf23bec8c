package oteltracer

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/herdlock/herdlock/middleware/lockmw"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// ScopeName is the instrumentation scope of the middleware's spans.
const ScopeName = "github.com/herdlock/herdlock/middleware/lockmw"

// Tracer is a [lockmw.Tracer] that records OpenTelemetry spans. It is safe
// for concurrent use.
type Tracer struct {
	tracer trace.Tracer
}

var _ lockmw.Tracer = (*Tracer)(nil)

// New returns a Tracer whose spans come from tp's tracer [ScopeName]. It
// returns an error when tp is nil.
func New(tp trace.TracerProvider) (*Tracer, error) {
	if tp == nil {
		return nil, errors.New("oteltracer: nil TracerProvider")
	}
	return &Tracer{tracer: tp.Tracer(ScopeName)}, nil
}

// Start implements [lockmw.Tracer]. The span is a child of the span in ctx,
// else of the invocation's Lambda trace header (see
// [ContextWithLambdaParent]), else the root of a new trace. It returns a
// span also when the sampler dropped it, so that the calls made under it
// are dropped too.
func (t *Tracer) Start(ctx context.Context, name string, start time.Time) (context.Context, lockmw.Span) {
	ctx, s := t.tracer.Start(ContextWithLambdaParent(ctx), name, trace.WithTimestamp(start))
	return ctx, span{s}
}

// span is one OpenTelemetry span.
type span struct{ s trace.Span }

func (s span) SetAttributes(attrs ...slog.Attr) {
	if !s.s.IsRecording() {
		return
	}
	kvs := make([]attribute.KeyValue, 0, len(attrs))
	for _, a := range attrs {
		if kv, ok := keyValue(a); ok {
			kvs = append(kvs, kv)
		}
	}
	s.s.SetAttributes(kvs...)
}

// errorTypeKey is the semantic conventions' error.type.
const errorTypeKey = attribute.Key("error.type")

func (s span) End(err error) {
	if err != nil {
		code := lockmw.ErrorReason(err)
		s.s.SetAttributes(errorTypeKey.String(code))
		s.s.SetStatus(codes.Error, code)
	}
	s.s.End()
}

// keyValue converts a to an attribute; durations become milliseconds.
func keyValue(a slog.Attr) (attribute.KeyValue, bool) {
	k := attribute.Key(a.Key)
	v := a.Value
	switch v.Kind() {
	case slog.KindString:
		return k.String(v.String()), true
	case slog.KindBool:
		return k.Bool(v.Bool()), true
	case slog.KindInt64:
		return k.Int64(v.Int64()), true
	case slog.KindUint64:
		return k.Int64(int64(min(v.Uint64(), 1<<63-1))), true
	case slog.KindFloat64:
		return k.Float64(v.Float64()), true
	case slog.KindDuration:
		return k.Float64(float64(v.Duration()) / float64(time.Millisecond)), true
	}
	return attribute.KeyValue{}, false
}
