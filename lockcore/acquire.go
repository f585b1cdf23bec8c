package lockcore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/herdlock/herdlock/lockcore/storeapi"
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
		l.count(metricStaleLock, 1)
		h.stopKeeper()
		l.drop(h, ErrLeaseLost)
		return false, &AcquireError{Reason: ReasonStaleLock, Revision: h.revision, Cause: ErrLeaseLost}
	}
	var tried tries // an attempt that did not acquire: a copy of it may land yet (see lostattempt.go)
	ok, _, err := l.acquire(ctx, attempt{tried: &tried})
	l.giveUp(&tried)
	return ok, err
}

// settle resolves an acquire of req, sent at sent, whose outcome is
// unknown (the store failed with err): the write may have been applied with
// its response lost. Consistent reads settle it (see settleRead): they are
// retried with capped backoff while the store fails or answers too slowly
// (a brownout), until until or ctx's deadline. It returns our item when our
// write was applied and we may still hold it, and the current item when it
// was not and another holder has the lock or published success: the caller
// waits on that (or reads the success), never as a second holder. On a
// free lock, a write not applied is an *AcquireError, unless it timed out
// (see isTimeout) or may be applied when sent again (see retryLater):
// then settle returns the item (nil when there is none),
// and the wait goes on. An applied write that we may not hold (until has passed,
// ctx ended, or its validity ran out while settling) is freed with a
// release, and so is one that stays unknown, so that no acquire is left
// held by nobody: the release is conditioned on our revision and changes
// nothing when our write was not applied. settle returns nil, and no error,
// after freeing a write whose validity ran out within the wait (freed is
// then our item as the store had it), and an
// *AcquireError when the write is freed because the time ran out or it
// stayed unknown.
func (l *Lock) settle(ctx context.Context, req storeapi.AcquireRequest, sent, until time.Time, err error) (cur, freed *storeapi.Item, _ error) {
	got, found, gerr := l.settleRead(ctx, until)
	applied := gerr == nil && found && got.Revision == req.Revision
	switch {
	case gerr == nil && !applied && found && (!got.Released || got.Result == Success || isTimeout(err) || retryLater(err)):
		return &got, nil, nil // another holder has it, or published: wait on it, or read it
	case gerr == nil && !applied && (isTimeout(err) || retryLater(err)):
		// A brownout lost our write on a free lock, or it was not applied
		// for a reason the next request may not meet (see retryLater):
		// the wait goes on.
		return nil, nil, nil
	case gerr == nil && !applied, gerr == nil && got.Released:
		// Not applied on a free lock, or ours released by somebody else
		// since: the store failed our write.
		l.logAt(slog.LevelWarn, "lock acquire failed", slog.Any("error", err))
		return nil, nil, &AcquireError{Reason: ReasonStore, Revision: req.Revision, Cause: err}
	case applied && !l.late(ctx, until) && time.Now().Before(sent.Add(l.o.lease-l.validityMargin())):
		return &got, nil, nil
	}
	// Freed, not failed: the freed hold made no attempt, so the episode's
	// attempts, reason and not-before stay as the item has them (the
	// release writes none of them; no read of them is needed).
	free := storeapi.ReleaseRequest{Key: l.key, Revision: req.Revision, NowMs: l.nowMs(), Result: Failure, KeepEpisode: true, Unheld: true}
	if l.free(ctx, free) == nil && applied && !l.late(ctx, until) {
		return nil, &got, nil // settled too late to hold, within the wait: it goes on
	}
	l.logAt(slog.LevelWarn, "lock acquire failed", slog.Any("error", err))
	return nil, nil, &AcquireError{Reason: ReasonStore, Revision: req.Revision, Cause: err}
}

// retryLater reports whether err says that a write was not applied for a
// reason the next request may not meet: expired credentials (see
// isExpiredSigning), or a conflict with a write in another Region (see
// isReplicatedConflict).
func retryLater(err error) bool { return isExpiredSigning(err) || isReplicatedConflict(err) }

// late reports whether an acquire may no longer hold what it wrote: ctx
// ended, or until (when not zero) has passed.
func (l *Lock) late(ctx context.Context, until time.Time) bool {
	return ctx.Err() != nil || (!until.IsZero() && !time.Now().Before(until))
}

// settleContext returns the context of settle's first read: it survives
// ctx's cancellation and the wait's end, and lasts max(poll interval, 1s,
// the call timeout), no longer than the lock's own release may take (see
// autoReleaseTimeout), but at least 100ms.
func (l *Lock) settleContext(ctx context.Context) (context.Context, context.CancelFunc) {
	budget := min(max(l.o.pollInterval, time.Second, l.callTimeout()), l.autoReleaseTimeout())
	if dl, ok := ctx.Deadline(); ok {
		budget = min(budget, time.Until(dl))
	}
	return context.WithTimeout(context.WithoutCancel(ctx), max(budget, 100*time.Millisecond))
}

// attempt qualifies one conditional write of acquire.
type attempt struct {
	until    time.Time             // the store call ends then, when not zero
	observed *storeapi.Observation // the clock-free branch, when set
	takeover bool                  // acquiring ends a wait: a take-over, unless its holder published a failure (see acquiredAfterFailure)
	herd     bool                  // from TryAcquireElseWaitForRelease: a fresh success is read, not redone
	// newsSinceMs, with herd: a success released at or after this time
	// (milliseconds, by the releaser's wall clock) is news to the call,
	// its answer: the write must not take the lock over it, not even as a
	// late copy landing after the call moved on (see acquire).
	newsSinceMs int64
	tried       *tries // when set, an attempt that did not acquire is noted there (see ownattempt.go)
}

// acquire makes one conditional write. It returns acquired=true and starts a
// hold on success; acquired=false with the current item (nil when there is
// none) when the condition failed; and an *AcquireError when the store
// failed and a consistent read could not show that our write was applied.
// The hold's context derives from ctx.
func (l *Lock) acquire(ctx context.Context, a attempt) (bool, *storeapi.Item, error) {
	until, obs, takeover := a.until, a.observed, a.takeover
	start := time.Now()
	maxHold := l.maxHold()
	if maxHold <= l.validityMargin() {
		return false, nil, &AcquireError{Reason: ReasonNoTimeLeft, Cause: ErrNoTimeLeft}
	}
	now := l.o.clock.Now()
	nowMs := now.UnixMilli()
	req := storeapi.AcquireRequest{
		Key:            l.key,
		Holder:         l.owner,
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
	if a.herd {
		// Guard (B) keeps the write, and every copy of it the network
		// delivers late, off a success the call would take for its
		// answer: a fresh one, or one published since the call began
		// (news). Without it a copy held up in the network lands over
		// the success its herd waits for, removes its answer, and its
		// sender holds it and fetches again.
		since := a.newsSinceMs
		if l.o.freshSuccess > 0 && (since <= 0 || nowMs-l.o.freshSuccess.Milliseconds() < since) {
			since = nowMs - l.o.freshSuccess.Milliseconds()
		}
		req.FreshSuccessSinceMs = max(since, 0)
	}
	callCtx := ctx
	if !until.IsZero() {
		var cancel context.CancelFunc
		callCtx, cancel = context.WithDeadline(ctx, until)
		defer cancel()
	}
	sent := time.Now()
	it, err := l.store.Acquire(callCtx, req)
	l.learn(sent, 0, false, err)
	if err != nil {
		var ce *storeapi.ConditionError
		if isRefusal(err) {
			// Refused before it was applied (see ErrStoreRefused):
			// nothing to settle, and nothing to wait for.
			l.logAt(slog.LevelWarn, "lock acquire refused by the store", slog.String("error", err.Error()))
			return false, nil, &AcquireError{Reason: ReasonStore, Revision: req.Revision, Cause: err}
		}
		if errors.As(err, &ce) {
			a.tried.note(req.Revision, sent, maxHold, takeover)
			return false, ce.Current, nil
		}
		if isThrottled(err) {
			a.tried.note(req.Revision, sent, maxHold, takeover)
			// A throttled request was refused before it was applied:
			// nothing to settle, and no read or write to add to the
			// herd's load.
			l.count(metricLockThrottled, 1)
			return false, nil, &AcquireError{Reason: ReasonThrottled, Cause: fmt.Errorf("lock %s/%s: %w", l.key.Group, l.key.ID, err)}
		}
		got, freed, err := l.settle(ctx, req, sent, until, err)
		if freed != nil {
			a.tried.free(freed) // our own write, held by nobody: see kind
		}
		if err != nil || got == nil {
			a.tried.note(req.Revision, sent, maxHold, takeover)
			return false, nil, err
		}
		it = *got
	}
	if it.Revision != req.Revision || it.Released {
		a.tried.note(req.Revision, sent, maxHold, takeover)
		return false, &it, nil
	}
	l.startHold(ctx, it, sent, maxHold, takeover, a.tried.freedItem(), start)
	return true, &it, nil
}

// kind reports what kind of acquisition it is, as an acquire wrote it
// (takeover: it ended a wait): a take-over of an abandoned lease, or the
// attempt after a published failure. When it replaced freed (nil: none), a
// late copy that the acquiring wait freed itself, it is of the kind the
// copy's acquisition was: the copy held the key for nobody, so the wait is
// the first to hold it since what the copy replaced (a crashed holder's
// lease is still taken over; a copy that replaced no item took over
// nothing).
func kind(it storeapi.Item, takeover bool, freed *storeapi.Item) (tookOver, afterFailure bool) {
	if freed != nil && it.PrevRevision == freed.Revision {
		c := *freed
		return takeover && c.PrevRevision != "" && tookOverAbandoned(c), acquiredAfterFailure(c)
	}
	return takeover && tookOverAbandoned(it), acquiredAfterFailure(it)
}

// startHold starts holding it, which an acquire sent at sent wrote (takeover:
// it ended a wait; freed: see kind), and counts and logs the acquisition,
// begun at start.
func (l *Lock) startHold(ctx context.Context, it storeapi.Item, sent time.Time, maxHold time.Duration, takeover bool, freed *storeapi.Item, start time.Time) *hold {
	took, after := kind(it, takeover, freed)
	h := l.begin(ctx, it, sent, maxHold, took, after)
	l.millis(metricLockAcquisitionDuration, time.Since(start))
	l.count(metricEpisodeAttempts, float64(h.attempt))
	switch {
	case h.tookOver:
		l.count(metricTakeover, 1)
		l.logAt(slog.LevelInfo, "took over an abandoned lease", slog.Int64("fence", it.Fence))
	case after:
		l.count(metricRetryAfterFailure, 1)
		l.logAt(slog.LevelInfo, "lock acquired after a published failure", slog.Int64("fence", it.Fence),
			slog.String("reason", it.FailReason), slog.Int64("attempt", h.attempt))
	default:
		l.logAt(slog.LevelDebug, "lock acquired", slog.Int64("fence", it.Fence))
	}
	return h
}

// tookOverAbandoned reports whether it, as a waiter's acquisition wrote
// it, took over an abandoned lease: neither the attempt after a published
// failure, nor an acquisition of a lock whose holder published a success
// that was no longer news to the wait, nor one of an absent item (no
// holder before it: a wait whose first read got no answer in time, or was
// throttled, and then found the key free).
func tookOverAbandoned(it storeapi.Item) bool {
	return it.PrevRevision != "" && it.PrevResult != Success && !acquiredAfterFailure(it)
}

// acquiredAfterFailure reports whether it, as an acquisition wrote it,
// replaced an item whose holder published a failure of its own (an
// upstream error, an operator's release): this is the attempt after it
// that the protocol intends, not a take-over of an abandoned lease. A
// failure the lock released by itself, because its holder lost its lease,
// reached its maximum hold or ran out of time (or freed a write nobody
// held, with no reason of its own), is an abandoned lease.
func acquiredAfterFailure(it storeapi.Item) bool {
	if it.PrevResult != Failure {
		return false
	}
	switch it.FailReason {
	case "", reasonLeaseLost, reasonMaxHold, reasonAborted, reasonContextEnded:
		return false
	}
	return true
}
