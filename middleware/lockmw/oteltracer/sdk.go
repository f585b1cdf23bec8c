package oteltracer

import (
	"context"

	"github.com/aws/smithy-go/tracing"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// SDKTracerProvider returns tp as the tracer provider of an AWS SDK for Go
// v2 client (smithy-go's tracing.TracerProvider, the TracerProvider field
// of the client's Options). Each operation is a client span named
// "Service.Operation" and each attempt of it an "Attempt" span; the SDK's
// other spans are folded into the nearest of those, which receives their
// aws.request_id and HTTP status code. The properties exception.message
// and api.error_message, the raw text of the service's error, are dropped;
// exception.type and api.error_code stay. It returns nil when tp is nil.
// The provider is safe for concurrent use.
func SDKTracerProvider(tp trace.TracerProvider) tracing.TracerProvider {
	if tp == nil {
		return nil
	}
	return sdkProvider{tp}
}

type sdkProvider struct{ tp trace.TracerProvider }

func (p sdkProvider) Tracer(scope string, _ ...tracing.TracerOption) tracing.Tracer {
	return sdkTracer{p.tp.Tracer(scope)}
}

type sdkTracer struct{ t trace.Tracer }

// attemptSpan is the name of the SDK's span for one try of an operation.
const attemptSpan = "Attempt"

func (t sdkTracer) StartSpan(ctx context.Context, name string, opts ...tracing.SpanOption) (context.Context, tracing.Span) {
	var o tracing.SpanOptions
	for _, opt := range opts {
		opt(&o)
	}
	var into *sdkSpan // the recorded span that the new one is under
	if parent, ok := tracing.GetSpan(ctx); ok {
		if p, ok := parent.(*sdkSpan); ok {
			into = p.recorded()
		}
	}
	s := &sdkSpan{name: name}
	if o.Kind == tracing.SpanKindClient || name == attemptSpan {
		if into != nil {
			ctx = trace.ContextWithSpan(ctx, into.otel)
		}
		ctx, s.otel = t.t.Start(ctx, name, trace.WithSpanKind(spanKind(o.Kind)))
		s.up = into
	} else {
		s.into = into
	}
	for k, v := range o.Properties.Values() {
		s.SetProperty(k, v)
	}
	return tracing.WithSpan(ctx, s), s
}

// sdkSpan is an SDK span: recorded (otel set, up the recorded span it is
// under) or folded into a recorded one (into, which may be nil outside an
// operation).
type sdkSpan struct {
	name string
	otel trace.Span
	up   *sdkSpan
	into *sdkSpan
}

func (s *sdkSpan) recorded() *sdkSpan {
	if s.otel != nil {
		return s
	}
	return s.into
}

func (s *sdkSpan) Name() string { return s.name }

func (s *sdkSpan) Context() tracing.SpanContext {
	r := s.recorded()
	if r == nil {
		return tracing.SpanContext{}
	}
	sc := r.otel.SpanContext()
	return tracing.SpanContext{TraceID: sc.TraceID().String(), SpanID: sc.SpanID().String(), IsRemote: sc.IsRemote()}
}

func (s *sdkSpan) AddEvent(name string, opts ...tracing.EventOption) {
	if s.otel == nil || !s.otel.IsRecording() {
		return
	}
	var o tracing.EventOptions
	for _, opt := range opts {
		opt(&o)
	}
	var kvs []attribute.KeyValue
	for k, v := range o.Properties.Values() {
		key, _ := k.(string)
		if kv, ok := sdkAttribute(key, v); ok {
			kvs = append(kvs, kv)
		}
	}
	s.otel.AddEvent(name, trace.WithAttributes(kvs...))
}

func (s *sdkSpan) SetProperty(k, v any) {
	key, _ := k.(string)
	if key == requestIDKey && s.otel != nil && s.up != nil {
		// Set on the attempt; the operation span carries it too, as the
		// semantic conventions have it.
		s.up.SetProperty(k, v)
	}
	target := s.otel
	if target == nil {
		if !forwarded(key) || s.into == nil {
			return
		}
		target = s.into.otel
	}
	if !target.IsRecording() {
		return
	}
	if kv, ok := sdkAttribute(key, v); ok {
		target.SetAttributes(kv)
	}
}

func (s *sdkSpan) SetStatus(status tracing.SpanStatus) {
	if s.otel == nil {
		return
	}
	switch status {
	case tracing.SpanStatusOK:
		s.otel.SetStatus(codes.Ok, "")
	case tracing.SpanStatusError:
		s.otel.SetStatus(codes.Error, "")
	}
}

func (s *sdkSpan) End() {
	if s.otel != nil {
		s.otel.End()
	}
}

const requestIDKey = "aws.request_id"

// forwarded reports whether a folded span passes the property key on.
func forwarded(key string) bool {
	return key == requestIDKey || key == "http.status_code"
}

// sdkAttribute converts an SDK property; it drops the raw error texts and
// renames the HTTP status code to the current semantic conventions' name.
func sdkAttribute(key string, v any) (attribute.KeyValue, bool) {
	switch key {
	case "", "exception.message", "api.error_message":
		return attribute.KeyValue{}, false
	case "http.status_code":
		key = "http.response.status_code"
	}
	k := attribute.Key(key)
	switch v := v.(type) {
	case string:
		return k.String(v), true
	case bool:
		return k.Bool(v), true
	case int:
		return k.Int(v), true
	case int64:
		return k.Int64(v), true
	case float64:
		return k.Float64(v), true
	case []string:
		return k.StringSlice(v), true
	}
	return attribute.KeyValue{}, false
}

func spanKind(k tracing.SpanKind) trace.SpanKind {
	switch k {
	case tracing.SpanKindClient:
		return trace.SpanKindClient
	case tracing.SpanKindServer:
		return trace.SpanKindServer
	case tracing.SpanKindProducer:
		return trace.SpanKindProducer
	case tracing.SpanKindConsumer:
		return trace.SpanKindConsumer
	}
	return trace.SpanKindInternal
}
