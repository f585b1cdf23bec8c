package lockmw

import (
	"context"
	"log/slog"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/herdlock/herdlock/lockcore"
)

// invTrace is the spans of one invocation. A nil *invTrace (no tracer, or
// an invocation the tracer cannot trace) records nothing, and its methods
// return at once without building attributes: tracing off costs a nil
// check per phase.
type invTrace struct {
	t    Tracer
	root Span
}

// beginTrace starts the invocation's span, with the invocation's
// attributes, or returns ctx and nil when t is nil or cannot trace ctx.
func beginTrace(ctx context.Context, t Tracer) (context.Context, *invTrace) {
	if t == nil {
		return ctx, nil
	}
	tctx, root := t.Start(ctx, spanInvocation, time.Now())
	if root == nil {
		return ctx, nil
	}
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		attrs := make([]slog.Attr, 0, 3)
		if lc.AwsRequestID != "" {
			attrs = append(attrs, slog.String(attrInvocationID, lc.AwsRequestID))
		}
		if arn := lc.InvokedFunctionArn; arn != "" {
			attrs = append(attrs, slog.String(attrResourceID, arn))
			if id, err := accountFromARN(arn); err == nil {
				attrs = append(attrs, slog.String(attrAccountID, strconv.FormatInt(id, 10)))
			}
		}
		root.SetAttributes(attrs...)
	}
	return tctx, &invTrace{t: t, root: root}
}

// setKey records the lock key on the invocation's span.
func (tr *invTrace) setKey(key lockcore.Key) {
	if tr == nil {
		return
	}
	tr.set(slog.String(attrLockGroup, key.Group), slog.String(attrLockID, key.ID))
}

// set records attrs on the invocation's span: the hook for attributes of
// other concerns, such as coalescing. Callers check tr != nil first, so
// that the variadic slice is not built with tracing off.
func (tr *invTrace) set(attrs ...slog.Attr) {
	if tr == nil {
		return
	}
	tr.root.SetAttributes(attrs...)
}

// start starts a child span of ctx now; it returns ctx and nil when tr is
// nil.
func (tr *invTrace) start(ctx context.Context, name string) (context.Context, Span) {
	if tr == nil {
		return ctx, nil
	}
	return tr.t.Start(ctx, name, time.Now())
}

// acquired ends the acquire span with the lock's outcome, records the
// wait, back-dated, under it when there was one, and puts the outcome on
// the invocation's span too.
func (tr *invTrace) acquired(actx context.Context, acquire Span, res lockcore.WaitResult, err error) {
	if tr == nil {
		return
	}
	outcome := slog.String(attrOutcome, res.Outcome.String())
	takeover := slog.Bool(attrTakeover, res.TookOver)
	afterFailure := slog.Bool(attrAfterFail, res.AfterFailure)
	polls := slog.Int(attrPolls, res.Polls)
	if res.Polls > 0 || res.Waited > 0 {
		if _, wait := tr.t.Start(actx, spanWait, time.Now().Add(-res.Waited)); wait != nil {
			wait.SetAttributes(outcome, polls, takeover, afterFailure)
			wait.End(nil)
		}
	}
	fence := slog.Int64(attrFence, res.Fence)
	if acquire != nil {
		acquire.SetAttributes(outcome, fence, takeover, afterFailure)
		acquire.End(err)
	}
	tr.root.SetAttributes(outcome, fence, takeover, afterFailure, polls)
}

// released ends the release span with what was published.
func (tr *invTrace) released(release Span, result lockcore.Result, fence int64, err error) {
	if tr == nil || release == nil {
		return
	}
	release.SetAttributes(slog.String(attrResult, string(result)), slog.Int64(attrFence, fence))
	release.End(err)
}

// end ends the invocation's span with the invocation's error.
func (tr *invTrace) end(err error) {
	if tr == nil {
		return
	}
	tr.root.End(err)
}
