package lockcore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// Acquire tries once to take the lock, with one conditional write, and
// reports whether it holds it. It does not wait: see
// [Lock.TryAcquireElseWaitForRelease].
//
// If the lock is already held by this Lock, Acquire checks the item: when it
// still carries our revision it returns true, and otherwise it returns an
// *[AcquireError] with [ReasonStaleLock] and forgets the stale hold.
//
// The holder's context (see [Lock.Context]) derives from ctx: the lock is
// released when ctx ends, so pass the context of the whole unit of work.
func (l *Lock) Acquire(ctx context.Context) (bool, error) {
	if h := l.current(); h != nil {
		stale, err := l.CheckForStaleLock(ctx)
		if err != nil {
			return false, &AcquireError{Reason: ReasonStore, Revision: h.revision, Cause: err}
		}
		if !stale {
			return true, nil
		}
		l.count(MetricStaleLock, 1)
		h.stopKeeper()
		l.drop(h, ErrLeaseLost)
		return false, &AcquireError{Reason: ReasonStaleLock, Revision: h.revision, Cause: ErrLeaseLost}
	}
	ok, _, err := l.acquire(ctx, attempt{})
	return ok, err
}

// settle resolves an acquire of req whose outcome is unknown (the store
// failed with err): the write may have been applied with its response lost.
// A consistent read, on a short budget of its own (see settleContext) that
// neither ctx's end nor until cuts short, settles it. It returns the item when our write was
// applied and we may still hold it. An applied write that we may not hold
// (until has passed, or ctx ended) is freed with a release, and so is one
// that stays unknown, so that no acquire is left held by nobody: the
// release is conditioned on our revision and changes nothing when our
// write was not applied.
func (l *Lock) settle(ctx context.Context, req AcquireRequest, until time.Time, err error) (Item, error) {
	rctx, cancel := l.settleContext(ctx)
	defer cancel()
	got, found, gerr := l.store.Get(rctx, l.key)
	applied := gerr == nil && found && got.Revision == req.Revision
	late := ctx.Err() != nil || (!until.IsZero() && !time.Now().Before(until))
	if applied && !late {
		return got, nil
	}
	if gerr != nil || applied {
		// Freed, not failed: nothing was attempted, so the episode's
		// attempts, reason and not-before stay as the item has them, read
		// or not.
		free := ReleaseRequest{Key: l.key, Revision: req.Revision, NowMs: l.nowMs(), Result: Failure, KeepEpisode: true}
		_, _ = l.store.Release(rctx, free)
	}
	l.logAt(slog.LevelWarn, "lock acquire failed", slog.Any("error", err))
	return Item{}, &AcquireError{Reason: ReasonStore, Revision: req.Revision, Cause: err}
}

// settleContext returns the context of settle: it survives ctx's
// cancellation and the wait's end, and lasts max(poll interval, 1s), no
// longer than a release may take (see releaseContext), but at least 100ms.
func (l *Lock) settleContext(ctx context.Context) (context.Context, context.CancelFunc) {
	budget := min(max(l.o.pollInterval, time.Second), l.o.releaseTimeout)
	if dl, ok := ctx.Deadline(); ok {
		budget = min(budget, time.Until(dl))
	}
	return context.WithTimeout(context.WithoutCancel(ctx), max(budget, 100*time.Millisecond))
}

// attempt qualifies one conditional write of acquire.
type attempt struct {
	until    time.Time    // the store call ends then, when not zero
	observed *Observation // the clock-free branch, when set
	takeover bool         // acquiring ends a wait for an abandoned holder
	herd     bool         // from TryAcquireElseWaitForRelease: a fresh success is read, not redone
}

// acquire makes one conditional write. It returns acquired=true and starts a
// hold on success; acquired=false with the current item (nil when there is
// none) when the condition failed; and an *AcquireError when the store
// failed and a consistent read could not show that our write was applied.
// The hold's context derives from ctx.
func (l *Lock) acquire(ctx context.Context, a attempt) (bool, *Item, error) {
	until, obs, takeover := a.until, a.observed, a.takeover
	start := time.Now()
	maxHold := l.maxHold()
	if maxHold <= l.validityMargin() {
		return false, nil, &AcquireError{Reason: ReasonNoTimeLeft, Cause: ErrNoTimeLeft}
	}
	now := l.o.clock.Now()
	nowMs := now.UnixMilli()
	req := AcquireRequest{
		Key:            l.key,
		Owner:          l.owner,
		Revision:       newRevision(),
		Lease:          l.o.lease,
		NowMs:          nowMs,
		LeaseUntilMs:   nowMs + min(l.o.lease, maxHold).Milliseconds(),
		ExpiresAtMs:    nowMs + maxHold.Milliseconds(),
		RecordAccount:  l.recordAccount,
		FenceBase:      nowMs * 1000,
		UseWallClock:   l.o.useWallClock,
		ClockAllowance: l.o.clockAllowance,
		Observed:       obs,
		MaxAttempts:    int64(l.o.maxAttempts),
	}
	if l.o.ttl > 0 {
		req.TTL = now.Add(l.o.ttl).Unix()
	}
	if a.herd && l.o.freshSuccess > 0 {
		req.FreshSuccessSinceMs = nowMs - l.o.freshSuccess.Milliseconds()
	}
	callCtx := ctx
	if !until.IsZero() {
		var cancel context.CancelFunc
		callCtx, cancel = context.WithDeadline(ctx, until)
		defer cancel()
	}
	sent := time.Now()
	it, err := l.store.Acquire(callCtx, req)
	if err != nil {
		var ce *ConditionError
		if errors.As(err, &ce) {
			return false, ce.Current, nil
		}
		if isThrottled(err) {
			// A throttled request was refused before it was applied:
			// nothing to settle, and no read or write to add to the
			// herd's load.
			l.count(MetricLockThrottled, 1)
			return false, nil, &AcquireError{Reason: ReasonThrottled, Cause: fmt.Errorf("lock %s/%s: %w", l.key.Group, l.key.ID, err)}
		}
		if it, err = l.settle(ctx, req, until, err); err != nil {
			return false, nil, err
		}
	}
	if it.Revision != req.Revision {
		return false, &it, nil
	}
	h := l.begin(ctx, it, sent, maxHold, takeover)
	l.millis(MetricLockAcquisitionDuration, time.Since(start))
	l.count(MetricEpisodeAttempts, float64(h.attempt))
	l.logAt(slog.LevelDebug, "lock acquired", slog.Int64("fence", it.Fence), slog.Bool("takeover", takeover))
	return true, &it, nil
}
