package lockmw

import (
	"errors"
	"log/slog"
	"time"

	"github.com/herdlock/herdlock/lockcore"
)

// metricNotTried is the metric (Count, 1) of an invocation that returned
// before trying the lock: no time left before the deadline, no lock key,
// no record account, or lock settings that lockcore refused. Its metrics
// document has the lock outcome outcomeNotTried; its log line says why.
const metricNotTried = "LockNotTried"

// outcomeNotTried is the lock outcome in the log line and the metrics
// document of an invocation that returned before trying the lock.
const outcomeNotTried = "NOT_TRIED"

// finish logs the invocation, flushes its metrics and ends its trace.
func (w *wrapper[TIn, TOut]) finish(c *call, err error) {
	c.logOutcome(err)
	w.flushMetrics(c)
	c.tr.end(err)
}

// outcome names the invocation's outcome in its log line and metrics.
func (c *call) outcome() string {
	if !c.tried {
		return outcomeNotTried
	}
	return c.info.Outcome.String()
}

// lockLost reports whether the hold ended before the handler returned, for
// a reason other than the release.
func (c *call) lockLost() bool {
	return c.lost != nil && !errors.Is(c.lost, lockcore.ErrReleased)
}

// level is the log level and message of the invocation's line: Debug for a
// routine outcome, Info for a take-over of an abandoned lease or an
// attempt after a published failure, Warn or Error for trouble.
func (c *call) level(err error) (slog.Level, string) {
	switch {
	case !c.tried && errors.Is(err, ErrBadInput):
		return slog.LevelWarn, "lockmw: handler not run: bad input"
	case !c.tried:
		return slog.LevelError, "lockmw: handler not run"
	case c.relErr != nil:
		return slog.LevelError, "lockmw: invocation done"
	case c.lockLost():
		return slog.LevelWarn, "lockmw: the lock ended before the handler returned"
	case errors.Is(c.answerErr, errAnswerTooLarge):
		return slog.LevelError, "lockmw: answer not published inline, too large; waiters get no answer: give Answers.Store or raise Answers.MaxInlineBytes"
	case errors.Is(c.answerErr, errAnswerStore):
		return slog.LevelError, "lockmw: answer not published: the answer store refused it; waiters get no answer"
	case c.answerErr != nil:
		return slog.LevelWarn, "lockmw: answer not published inline; waiters get no answer"
	case err != nil:
		return slog.LevelWarn, "lockmw: invocation done"
	case c.info.TookOver:
		return slog.LevelInfo, "lockmw: invocation done; took over an abandoned lease"
	case c.info.AfterFailure:
		return slog.LevelInfo, "lockmw: invocation done; acquired after a published failure"
	}
	return slog.LevelDebug, "lockmw: invocation done"
}

// logOutcome writes the invocation's one log line; its attributes are
// built only when the level is enabled.
func (c *call) logOutcome(err error) {
	ctx := c.tctx
	level, msg := c.level(err)
	if !c.log.Enabled(ctx, level) {
		return
	}
	attrs := []slog.Attr{
		slog.String("outcome", c.outcome()),
		slog.Int64("fence", c.info.Fence),
		slog.Bool("takeover", c.info.TookOver),
		slog.Bool("afterFailure", c.info.AfterFailure),
		slog.Int("polls", c.info.Polls),
		slog.Bool("announced", c.info.Announced),
		slog.Duration("waited", c.info.Waited),
		slog.Duration("held", c.held),
		slog.Duration("duration", time.Since(c.start)),
	}
	if err != nil {
		attrs = append(attrs, slog.Any("error", err))
	}
	if c.lockLost() {
		attrs = append(attrs, slog.Any("lockLost", c.lost))
	}
	if c.relErr != nil {
		attrs = append(attrs, slog.Any("releaseError", c.relErr))
	}
	if c.answerErr != nil {
		attrs = append(attrs, slog.Any("answerError", c.answerErr))
	}
	c.log.LogAttrs(ctx, level, msg, attrs...)
}

// flushMetrics writes the invocation's one metrics document.
func (w *wrapper[TIn, TOut]) flushMetrics(c *call) {
	ctx := c.tctx
	if !c.tried {
		c.rec.AddMetric(metricNotTried, "Count", 1)
	}
	var fence, reqID, id any
	if c.info.Fence > 0 {
		fence = c.info.Fence
	}
	if r := requestID(ctx); r != "" {
		reqID = r
	}
	if c.info.Key.ID != "" {
		id = c.info.Key.ID
	}
	// The cold start goes into the first invocation's document batch; the
	// emf.Metrics takes it once.
	cold := false
	if w.coldStart {
		w.coldOnce.Do(func() { cold = true })
	}
	if ferr := flushInto(c.rec, cold, [...]prop{
		{propLockID, id},
		{propLockGroup, c.info.Key.Group},
		{propOutcome, c.outcome()},
		{propFence, fence},
		{propRequestID, reqID},
	}); ferr != nil {
		c.log.WarnContext(ctx, "lockmw: metrics flush", slog.Any("error", ferr))
	}
}
