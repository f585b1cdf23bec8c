package xraytracer

import (
	"context"
	"log/slog"
	"time"

	"github.com/aws/aws-xray-sdk-go/strategy/exception"
	"github.com/aws/aws-xray-sdk-go/xray"
	"github.com/herdlock/herdlock/middleware/lockmw"
)

// Tracer is a [lockmw.Tracer] that records X-Ray subsegments. It is safe
// for concurrent use.
type Tracer struct{}

var _ lockmw.Tracer = (*Tracer)(nil)

// New returns a Tracer without changing the X-Ray SDK's process-wide
// logger or context-missing strategy: use it when the program configures
// the SDK itself, and [Setup] otherwise.
func New() *Tracer { return &Tracer{} }

// Start implements [lockmw.Tracer]: it begins a subsegment of the segment
// in ctx, or of the one Lambda started when ctx carries its trace header.
// It returns a nil span, and makes no X-Ray call that needs a segment, when
// ctx carries neither.
func (*Tracer) Start(ctx context.Context, name string, start time.Time) (context.Context, lockmw.Span) {
	if !traceable(ctx) {
		return ctx, nil
	}
	sctx, seg := xray.BeginSubsegment(ctx, name)
	if seg == nil {
		return ctx, nil
	}
	seg.Lock()
	seg.StartTime = float64(start.UnixNano()) / float64(time.Second)
	seg.Unlock()
	return sctx, span{seg}
}

// traceable reports whether ctx can carry subsegments: it holds a segment,
// or the trace header with which the Lambda runtime starts one.
func traceable(ctx context.Context) bool {
	if xray.GetSegment(ctx) != nil {
		return true
	}
	h, _ := ctx.Value(xray.LambdaTraceHeaderKey).(string)
	return h != ""
}

// span is one subsegment.
type span struct{ seg *xray.Segment }

// metadataNamespace holds the attributes that are not annotations.
const metadataNamespace = "herdlock"

func (s span) SetAttributes(attrs ...slog.Attr) {
	for _, a := range attrs {
		v, ok := annotationValue(a.Value)
		if !ok {
			continue
		}
		// The values are of the kinds X-Ray takes, so neither call fails.
		if name, ok := annotationName(a.Key); ok {
			_ = s.seg.AddAnnotation(name, v)
		} else {
			_ = s.seg.AddMetadataToNamespace(metadataNamespace, a.Key, v)
		}
	}
}

func (s span) End(err error) {
	if err == nil {
		s.seg.Close(nil)
		return
	}
	code := lockmw.ErrorReason(err)
	s.seg.Close(&exception.XRayError{Type: code, Message: code})
}

// annotationName is the X-Ray annotation (letters, digits and underscores
// only) of a lock attribute (the names docs/tracing.md lists).
func annotationName(key string) (string, bool) {
	switch key {
	case "herdlock.lock.group":
		return "lock_group", true
	case "herdlock.lock.id":
		return "lock_id", true
	case "herdlock.lock.outcome":
		return "outcome", true
	case "herdlock.lock.fence":
		return "fence", true
	case "herdlock.lock.takeover":
		return "takeover", true
	case "herdlock.lock.after_failure":
		return "after_failure", true
	case "herdlock.lock.polls":
		return "polls", true
	case "herdlock.lock.result":
		return "result", true
	case "herdlock.lock.coalesced":
		return "coalesced", true
	}
	return "", false
}

// annotationValue converts v to a type X-Ray annotations take: bool,
// float64 or string; durations in milliseconds.
func annotationValue(v slog.Value) (any, bool) {
	switch v.Kind() {
	case slog.KindString:
		return v.String(), true
	case slog.KindBool:
		return v.Bool(), true
	case slog.KindInt64:
		return float64(v.Int64()), true
	case slog.KindUint64:
		return float64(v.Uint64()), true
	case slog.KindFloat64:
		return v.Float64(), true
	case slog.KindDuration:
		return float64(v.Duration()) / float64(time.Millisecond), true
	}
	return nil, false
}
