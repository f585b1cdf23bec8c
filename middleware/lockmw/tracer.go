package lockmw

import (
	"context"
	"log/slog"
	"time"
)

// Tracer records the spans of the lock's phases in each invocation; give
// one with [Telemetry].Tracer. Package xraytracer records them as X-Ray
// subsegments, package oteltracer as OpenTelemetry spans, and
// [MultiTracer] records them with several tracers at once, for a
// migration from one to the other. Implementations must be safe for
// concurrent use.
type Tracer interface {
	// Start starts the span name, which began at start, as a child of the
	// span that ctx carries, or of the invocation's own trace (the Lambda
	// trace header) when ctx carries none. It returns ctx with the new span,
	// under which the middleware starts the child spans and makes the
	// lock's store calls. The start time may lie in the past: the wait span
	// is started, back-dated, once the wait is over.
	//
	// Start returns a nil Span when ctx cannot be traced (no trace header,
	// say); the middleware then records nothing more of that invocation.
	Start(ctx context.Context, name string, start time.Time) (context.Context, Span)
}

// Span is one span started by a [Tracer]. The middleware calls its methods
// from one goroutine at a time, and none after End.
type Span interface {
	// SetAttributes records attributes on the span: strings, integers,
	// booleans, floats and durations (the slog kinds String, Int64,
	// Uint64, Bool, Float64, Duration). A tracer may drop those it cannot
	// record.
	SetAttributes(attrs ...slog.Attr)
	// End ends the span, as failed when err is not nil. A tracer must not
	// record err's text, which may carry upstream payloads: it records a
	// short code instead (see the adapters).
	End(err error)
}

// Span names: the invocation's span, and its children for the phases of
// the lock. docs/tracing.md lists them, and the attribute keys below (a
// test ties its list to these values).
const (
	spanInvocation = "herdlock"     // the middleware's part of the invocation
	spanAcquire    = "lock.acquire" // TryAcquireElseWaitForRelease
	spanWait       = "lock.wait"    // the wait for another holder, back-dated
	spanRelease    = "lock.release" // Release
)

// Attribute keys. Those of the lock are herdlock's own; those of the
// invocation follow the OpenTelemetry semantic conventions.
const (
	attrLockGroup = "herdlock.lock.group"         // string: the lock group
	attrLockID    = "herdlock.lock.id"            // string: the lock id
	attrOutcome   = "herdlock.lock.outcome"       // string: ACQUIRED, RELEASED or FAILED
	attrFence     = "herdlock.lock.fence"         // int: the holder's fence
	attrTakeover  = "herdlock.lock.takeover"      // bool: acquired by taking over an abandoned lease
	attrAfterFail = "herdlock.lock.after_failure" // bool: acquired after the previous holder published a failure
	attrPolls     = "herdlock.lock.polls"         // int: reads of the lock item while waiting
	attrResult    = "herdlock.lock.result"        // string: success or failure, on the release span
	attrCoalesced = "herdlock.lock.coalesced"     // bool: shared another invocation's attempt in this process

	attrInvocationID = "faas.invocation_id" // string: the Lambda request id
	attrResourceID   = "cloud.resource_id"  // string: the invoked function ARN
	attrAccountID    = "cloud.account.id"   // string: the account of the function
)

// MultiTracer returns a [Tracer] that records every span with each of
// tracers, in order, so that two tracing systems can run side by side
// while one replaces the other. Nil tracers are skipped; with none left it
// returns nil, which [Telemetry].Tracer takes as tracing off. The context a
// tracer returns is passed to the next, so each finds its own parent.
func MultiTracer(tracers ...Tracer) Tracer {
	var ts multiTracer
	for _, t := range tracers {
		switch t := t.(type) {
		case nil:
		case multiTracer:
			ts = append(ts, t...)
		default:
			ts = append(ts, t)
		}
	}
	switch len(ts) {
	case 0:
		return nil
	case 1:
		return ts[0]
	}
	return ts
}

type multiTracer []Tracer

func (ts multiTracer) Start(ctx context.Context, name string, start time.Time) (context.Context, Span) {
	var spans multiSpan
	for _, t := range ts {
		var s Span
		ctx, s = t.Start(ctx, name, start)
		if s != nil {
			spans = append(spans, s)
		}
	}
	switch len(spans) {
	case 0:
		return ctx, nil
	case 1:
		return ctx, spans[0]
	}
	return ctx, spans
}

type multiSpan []Span

func (ss multiSpan) SetAttributes(attrs ...slog.Attr) {
	for _, s := range ss {
		s.SetAttributes(attrs...)
	}
}

func (ss multiSpan) End(err error) {
	for _, s := range ss {
		s.End(err)
	}
}
