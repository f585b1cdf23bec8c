package lockmw

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/herdlock/herdlock/lockcore"
)

// call is the state of one invocation.
type call struct {
	start    time.Time
	log      *slog.Logger
	rec      *recorder
	tr       *tracer
	tctx     context.Context // the invocation's context, with the root subsegment
	info     Info
	hasDL    bool
	deadline time.Time
	held     time.Duration
	lost     error // why the hold ended before the handler returned, if it did
	relErr   error
}

func (w *wrapper[TIn, TOut]) invoke(ctx context.Context, in TIn) (out TOut, err error) {
	c := &call{start: time.Now(), log: w.log, rec: newRecorder(), tctx: ctx}
	reqID := requestID(ctx)
	if reqID != "" {
		c.log = withLazy(c.log, slog.String("requestId", reqID))
	}

	id, err := w.lockID(ctx, in)
	if err != nil {
		c.log.ErrorContext(ctx, "lockmw: no lock key; handler not run", slog.Any("error", err))
		return out, err
	}
	c.info.Key = lockcore.Key{Group: w.group, ID: id}
	lockLog := c.log // lockcore adds the group and id itself
	c.log = withLazy(c.log, slog.String("lockGroup", w.group), slog.String("lockId", id))

	c.deadline, c.hasDL = ctx.Deadline()
	if c.hasDL {
		if left := time.Until(c.deadline); left <= w.margin {
			err := fmt.Errorf("%w: %v left, safety margin %v", ErrNoTimeLeft, left.Round(time.Millisecond), w.margin)
			c.log.ErrorContext(ctx, "lockmw: handler not run", slog.Any("error", err))
			return out, err
		}
	}
	acct, app, err := w.account(ctx)
	if err != nil {
		c.log.ErrorContext(ctx, "lockmw: handler not run", slog.Any("error", err))
		return out, err
	}
	owner := strings.TrimSpace(w.owner(ctx))
	if owner == "" {
		owner = defaultOwner(ctx)
	}

	store := w.store
	p := lockcore.Params{LockID: id, LockGroup: w.group, OwnerName: owner, AccountID: acct, AppID: app}
	if c.hasDL {
		// Hold and wait until the deadline minus the margin; lockcore ends
		// every store call of the wait by then too.
		deadline, margin := c.deadline, w.margin
		p.RemainingTime = func() time.Duration { return time.Until(deadline) - margin }
	}
	// Release, also the one the lock makes by itself at the maximum hold,
	// may use three quarters of the margin; the last quarter is the
	// metrics flush's.
	opts := append(w.lockOpts[:len(w.lockOpts):len(w.lockOpts)], lockcore.WithLogger(lockLog), lockcore.WithMetrics(c.rec),
		lockcore.WithReleaseTimeout(max(w.margin*3/4, time.Millisecond)))
	lock, err := lockcore.New(store, p, opts...)
	if err != nil {
		err = fmt.Errorf("lockmw: %w", err)
		c.log.ErrorContext(ctx, "lockmw: handler not run", slog.Any("error", err))
		return out, err
	}

	c.tctx, c.tr = beginTrace(ctx, w.tracing)
	c.tr.annotate("lock_group", w.group, "lock_id", id)
	returned := false
	defer func() {
		if !returned {
			err = errPanicked // for the log line and the trace; the panic goes on
		}
		w.finish(c, err)
	}()

	res, lerr := c.acquire(lock)
	switch res.Outcome {
	case lockcore.Acquired:
		out, err = w.hold(c, lock, in)
	case lockcore.Released:
		hctx := withInfo(c.tctx, &c.info)
		if w.onReleased != nil {
			out, err = w.onReleased(hctx, in)
		} else {
			out, err = w.h(hctx, in)
		}
	default:
		ferr := fmt.Errorf("%w: %w", ErrLockFailed, lerr)
		if w.onFailed != nil {
			out, err = w.onFailed(withInfo(c.tctx, &c.info), in, ferr)
		} else {
			err = ferr
		}
	}
	returned = true
	return out, err
}

// errPanicked stands for the error of a handler that panicked, in the log
// and the trace only.
var errPanicked = errors.New("lockmw: handler panicked")

// acquire runs TryAcquireElseWaitForRelease inside the acquire (and wait)
// subsegments, and fills c.info.
func (c *call) acquire(lock *lockcore.Lock) (lockcore.WaitResult, error) {
	actx, aseg := c.tr.sub(c.tctx, segAcquire)
	// The lock's calls go under the root subsegment: the holder context
	// derives from this context and outlives the acquire subsegment.
	res, err := lock.TryAcquireElseWaitForRelease(c.tctx)
	if res.Polls > 0 || res.Waited > 0 {
		c.tr.backdated(actx, segWait, res.Waited,
			"outcome", res.Outcome.String(), "polls", res.Polls, "takeover", res.TookOver)
	}
	annotate(aseg, "outcome", res.Outcome.String(), "fence", res.Fence, "takeover", res.TookOver)
	closeSeg(aseg, err)
	c.tr.annotate("outcome", res.Outcome.String(), "fence", res.Fence, "takeover", res.TookOver)
	c.info.Outcome = res.Outcome
	c.info.Fence = res.Fence
	c.info.TookOver = res.TookOver
	c.info.ResultRef = res.ResultRef
	c.info.Polls = res.Polls
	c.info.Waited = res.Waited
	if res.Outcome == lockcore.Acquired {
		c.info.Revision = lock.Revision()
	}
	return res, err
}

// hold runs the handler with the holder's context and releases the lock
// before returning, also when the handler panics.
func (w *wrapper[TIn, TOut]) hold(c *call, lock *lockcore.Lock, in TIn) (out TOut, err error) {
	lctx := lock.Context()
	acquiredAt := time.Now()
	returned := false
	defer func() {
		if !returned { // a panic (or runtime.Goexit): release as failure, let it go on
			c.held = time.Since(acquiredAt)
			c.release(lock, lockcore.Failure, "")
		}
	}()
	out, err = w.h(withInfo(lctx, &c.info), in)
	returned = true
	c.held = time.Since(acquiredAt)
	if lctx.Err() != nil {
		c.lost = context.Cause(lctx)
	}
	result, ref := lockcore.Failure, ""
	if err == nil {
		result = lockcore.Success
		if w.resultRef != nil {
			ref = w.resultRef(out)
		}
	}
	c.release(lock, result, ref)
	return out, err
}

func (c *call) release(lock *lockcore.Lock, result lockcore.Result, ref string) {
	rctx, rseg := c.tr.sub(c.tctx, segRelease)
	err := lock.Release(rctx, result, ref)
	annotate(rseg, "result", string(result), "fence", c.info.Fence)
	closeSeg(rseg, err)
	c.relErr = err
}

// finish logs the invocation, flushes its metrics and ends its trace.
func (w *wrapper[TIn, TOut]) finish(c *call, err error) {
	ctx := c.tctx
	// A routine outcome is a Debug line; a take-over is worth an Info line;
	// errors, a lost lock and a failed release are Warn or Error.
	level, msg := slog.LevelDebug, "lockmw: invocation done"
	lost := c.lost != nil && !errors.Is(c.lost, lockcore.ErrReleased)
	switch {
	case c.relErr != nil:
		level = slog.LevelError
	case lost:
		level, msg = slog.LevelWarn, "lockmw: the lock ended before the handler returned"
	case err != nil:
		level = slog.LevelWarn
	case c.info.TookOver:
		level = slog.LevelInfo
	}
	if c.log.Enabled(ctx, level) {
		attrs := []slog.Attr{
			slog.String("outcome", c.info.Outcome.String()),
			slog.Int64("fence", c.info.Fence),
			slog.Bool("takeover", c.info.TookOver),
			slog.Int("polls", c.info.Polls),
			slog.Duration("waited", c.info.Waited),
			slog.Duration("held", c.held),
			slog.Duration("duration", time.Since(c.start)),
		}
		if err != nil {
			attrs = append(attrs, slog.Any("error", err))
		}
		if lost {
			attrs = append(attrs, slog.Any("lockLost", c.lost))
		}
		if c.relErr != nil {
			attrs = append(attrs, slog.Any("releaseError", c.relErr))
		}
		c.log.LogAttrs(ctx, level, msg, attrs...)
	}

	var fence any
	if c.info.Fence > 0 {
		fence = c.info.Fence
	}
	var reqID any
	if id := requestID(ctx); id != "" {
		reqID = id
	}
	var cold func()
	if w.coldStart {
		cold = func() {
			w.coldOnce.Do(func() {
				if err := w.metrics.CaptureColdStart(lambdacontext.FunctionName); err != nil {
					c.log.WarnContext(ctx, "lockmw: cold start metric", slog.Any("error", err))
				}
			})
		}
	}
	if ferr := c.rec.flushInto(w.metrics, cold, [...]prop{
		{propLockID, c.info.Key.ID},
		{propLockGroup, c.info.Key.Group},
		{propOutcome, c.info.Outcome.String()},
		{propFence, fence},
		{propRequestID, reqID},
	}); ferr != nil {
		c.log.WarnContext(ctx, "lockmw: metrics flush", slog.Any("error", ferr))
	}
	c.tr.close(err)
}

// lockID takes the lock id from the event.
func (w *wrapper[TIn, TOut]) lockID(ctx context.Context, in TIn) (string, error) {
	if w.key == nil {
		return w.staticKey, nil
	}
	id, err := w.key(ctx, in)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrKey, err)
	}
	id = strings.TrimSpace(id)
	if id == "" {
		return "", fmt.Errorf("%w: the key function returned a blank id", ErrKey)
	}
	return id, nil
}

// account returns the record account: configured, or from the function ARN.
func (w *wrapper[TIn, TOut]) account(ctx context.Context) (int64, int64, error) {
	if w.accountSet {
		return w.accountID, w.appID, nil
	}
	lc, ok := lambdacontext.FromContext(ctx)
	if !ok || lc.InvokedFunctionArn == "" {
		return 0, 0, fmt.Errorf("%w: no WithRecordAccount and no function ARN in the Lambda context", ErrNoAccount)
	}
	id, err := accountFromARN(lc.InvokedFunctionArn)
	if err != nil {
		return 0, 0, fmt.Errorf("%w: %w", ErrNoAccount, err)
	}
	return id, 1, nil
}
