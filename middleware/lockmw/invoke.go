package lockmw

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/herdlock/herdlock/emf"
	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/middleware/internal/answerby"
)

// call is the state of one invocation.
type call struct {
	start     time.Time
	log       *slog.Logger // with the request id, and the lock key once known
	lockLog   *slog.Logger // for lockcore, which adds the key itself
	rec       *emf.Batch   // the invocation's own metrics document
	tel       telemetry    // what Metrics(ctx) and Logger(ctx) return
	flight    *flight      // the in-process lock attempt this invocation leads, if it does
	tr        *invTrace
	tctx      context.Context // the invocation's context, with the invocation's span
	info      Info
	tried     bool // the lock was tried; false when the invocation returned before
	hasDL     bool
	deadline  time.Time
	margin    time.Duration   // the safety margin: the holder's release ends by the deadline less a quarter of it
	params    lockcore.Params // the lock's parameters, once built
	held      time.Duration
	lost      error // why the hold ended before the handler returned, if it did
	relErr    error
	answer    []byte // the answer the holder published inline, if it did
	answerErr error  // why the holder's answer was not published inline
}

// invoke is the wrapped handler. Whatever happens, also a panic, it ends
// with finish: one log line, one metrics flush, the end of the trace.
func (w *wrapper[TIn, TOut]) invoke(ctx context.Context, in TIn) (out TOut, err error) {
	c := w.begin(ctx)
	returned := false
	defer func() {
		switch {
		case returned:
		case w.panicAsError:
			var zero TOut
			out, err = zero, w.asError(c, recover())
		default:
			err = errPanicked // for the log line and the trace; the panic goes on
		}
		w.finish(c, err)
	}()
	out, err = w.run(c, in)
	returned = true
	return out, err
}

// errPanicked stands for the error of a handler that panicked, in the log
// and the trace, when the panic goes on.
var errPanicked = ErrHandlerPanicked

// asError is the invocation's error after a recovered panic with value v
// (nil for runtime.Goexit, which goes on), with [WithPanicAsError].
func (w *wrapper[TIn, TOut]) asError(c *call, v any) error {
	if v == nil {
		return errPanicked
	}
	c.log.ErrorContext(c.tctx, "lockmw: handler panicked; the invocation returns an error",
		slog.Any("panic", v), slog.String("stack", string(debug.Stack())))
	return panicError(v)
}

// begin starts the invocation: its clock, logger, metrics and trace.
func (w *wrapper[TIn, TOut]) begin(ctx context.Context) *call {
	c := &call{start: time.Now(), log: w.log, rec: w.metrics.NewBatch(), margin: w.margin}
	c.info.Key.Group = w.group
	if reqID := requestID(ctx); reqID != "" {
		c.log = withLazy(c.log, slog.String("requestId", reqID))
	}
	c.lockLog = c.log
	if l := w.lockSet.Logger; l != nil { // lockcore.WithLogger in WithLockOptions
		c.lockLog = l
		if reqID := requestID(ctx); reqID != "" {
			c.lockLog = withLazy(l, slog.String("requestId", reqID))
		}
	}
	c.deadline, c.hasDL = ctx.Deadline()
	c.tctx, c.tr = beginTrace(ctx, w.tracer)
	return c
}

// run tries the lock and runs the handler for the outcome.
func (w *wrapper[TIn, TOut]) run(c *call, in TIn) (TOut, error) {
	lock, err := w.newLock(c, in)
	if err != nil {
		var zero TOut
		return zero, err
	}
	c.tried = true
	defer c.landFlight(false, publication{}) // if nothing else landed it
	lock, res, lerr := w.attempt(c, lock)
	switch res.Outcome {
	case lockcore.Acquired:
		return w.hold(c, lock, in)
	case lockcore.Released:
		return w.released(c, in, res)
	default:
		return w.failed(c, in, lerr)
	}
}

// acquire runs TryAcquireElseWaitForRelease inside the acquire (and wait)
// spans, and fills c.info.
func (c *call) acquire(lock *lockcore.Lock) (lockcore.WaitResult, error) {
	actx, aspan := c.tr.start(c.tctx, spanAcquire)
	// The lock's calls go under the invocation's span: the holder context
	// derives from this context and outlives the acquire span.
	res, err := lock.TryAcquireElseWaitForRelease(c.tctx)
	c.tr.acquired(actx, aspan, res, err)
	c.info.Outcome = res.Outcome
	c.info.Fence = res.Fence
	c.info.TookOver = res.TookOver
	c.info.AfterFailure = res.AfterFailure
	c.info.ResultRef = res.ResultRef
	c.info.Announced = res.Announced
	c.info.Polls = res.Polls
	c.info.Waited = res.Waited
	if res.Outcome == lockcore.Acquired {
		c.info.Revision = lock.Revision()
	}
	return res, err
}

// hold runs Fetch with the holder's context and releases the lock before
// returning, as failure when Fetch or ResultRef panics: no renewal
// outlives the invocation.
func (w *wrapper[TIn, TOut]) hold(c *call, lock *lockcore.Lock, in TIn) (out TOut, err error) {
	lctx := lock.Context()
	// The followers in the process wait for this hold as a waiter on the
	// store would: when it ends before its release (lease lost, maximum
	// hold), they try the lock themselves instead of waiting for Fetch.
	defer context.AfterFunc(lctx, func() {
		if !errors.Is(context.Cause(lctx), lockcore.ErrReleased) {
			c.landFlight(false, publication{})
		}
	})()
	acquiredAt := time.Now()
	stop := c.landWhenHoldEnds(lctx)
	defer stop()
	released := false
	defer func() {
		if released {
			return
		}
		// A panic (or runtime.Goexit): release as failure, let it go on.
		if c.held == 0 {
			c.held = time.Since(acquiredAt)
		}
		c.release(lock, lockcore.Failure, "", failureOptions(nil, time.Now())...)
	}()
	out, err = w.hs.Fetch(c.handlerContext(lctx), in)
	c.held = time.Since(acquiredAt)
	if lctx.Err() != nil {
		c.lost = context.Cause(lctx)
	}
	result, ref, opts := w.releaseFor(c, lctx, out, err)
	released = true
	c.release(lock, result, ref, opts...)
	return out, err
}

// releaseFor is what the holder publishes for Fetch's result: success
// with the result reference and the inline answer, or failure with the
// error's retry hints. lctx is the holder's context: an answer store's
// put ends with the hold.
func (w *wrapper[TIn, TOut]) releaseFor(c *call, lctx context.Context, out TOut, err error) (lockcore.Result, string, []lockcore.ReleaseOption) {
	if err != nil {
		return lockcore.Failure, "", failureOptions(err, time.Now())
	}
	ref := ""
	if w.hs.ResultRef != nil {
		ref = w.hs.ResultRef(out)
	}
	return lockcore.Success, ref, w.answerOption(lctx, c, out)
}

func (c *call) release(lock *lockcore.Lock, result lockcore.Result, ref string, opts ...lockcore.ReleaseOption) {
	rctx, rspan := c.tr.start(c.tctx, spanRelease)
	// The last quarter of the margin is the metrics flush's; a front door
	// that must answer sooner (behind API Gateway, its integration
	// timeout) ends the release by then.
	var end time.Time
	if c.hasDL {
		end = c.deadline.Add(-c.margin / 4)
	}
	if by, ok := answerby.From(c.tctx); ok && (end.IsZero() || by.Before(end)) {
		end = by
	}
	if !end.IsZero() {
		var cancel context.CancelFunc
		rctx, cancel = context.WithDeadline(rctx, end)
		defer cancel()
	}
	err := lock.Release(rctx, result, ref, opts...)
	c.tr.released(rspan, result, c.info.Fence, err)
	c.relErr = err
	// Followers in the process share a published success, nothing else.
	c.landFlight(result == lockcore.Success && err == nil, publication{fence: c.info.Fence, ref: ref, answer: c.answer})
}

// handlerContext is ctx with what the handler reads from it: the lock's
// Info, the invocation's metrics and its logger.
func (c *call) handlerContext(ctx context.Context) context.Context {
	c.tel = telemetry{metrics: c.rec, log: c.log} // the log has the lock key now
	return withTelemetry(withInfo(ctx, &c.info), &c.tel)
}

// released returns the holder's inline answer, or runs the read handler,
// after another holder's success.
func (w *wrapper[TIn, TOut]) released(c *call, in TIn, res lockcore.WaitResult) (TOut, error) {
	hctx := c.handlerContext(c.tctx)
	if w.hs.OnReleased != nil {
		return w.hs.OnReleased(hctx, in)
	}
	// An answer store's read ends before the deadline, with a quarter of
	// the margin left to reply: one that hangs must not make the
	// invocation time out.
	actx := hctx
	if c.hasDL {
		var cancel context.CancelFunc
		actx, cancel = context.WithDeadline(hctx, c.deadline.Add(-w.margin/4))
		defer cancel()
	}
	out, err := w.inlineAnswer(actx, res)
	if err != nil && w.hs.OnFailed != nil {
		return w.hs.OnFailed(hctx, in, err)
	}
	return out, err
}

// failed runs the fallback, or returns the lock's failure.
func (w *wrapper[TIn, TOut]) failed(c *call, in TIn, lerr error) (TOut, error) {
	ferr := fmt.Errorf("%w: %w", ErrLockFailed, lerr)
	if w.hs.OnFailed != nil {
		return w.hs.OnFailed(c.handlerContext(c.tctx), in, ferr)
	}
	var zero TOut
	return zero, ferr
}
