package lockcore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/herdlock/herdlock/lockcore/storeapi"
)

// hold is one acquisition of the lock: its identity, its context, and the
// keeper goroutine that renews it and enforces its validity and maximum.
type hold struct {
	revision string
	fence    int64
	tookOver bool // acquired by a waiter from an abandoned lease
	// afterFailure: acquired over a failure its holder published (see acquiredAfterFailure)
	afterFailure bool
	attempt      int64     // this hold's attempt number in its failure episode, from 1
	start        time.Time // monotonic: when the acquire was sent
	deadline     time.Time // monotonic: the hard maximum, less ρ·maxHold so a slow clock still stops before expiresAt
	expMs        int64     // wall clock: the stored hard maximum (ExpiresAtMs), which no renewal's lease may pass
	holdMean     int64     // the key's hold history as the acquired item had it (see Item.HoldMeanMs)
	holdDev      int64

	parent context.Context // the context given to Acquire
	ctx    context.Context // the holder's context
	cancel context.CancelCauseFunc

	stopOnce sync.Once
	stop     chan struct{} // closed to stop the keeper
	poke     chan struct{} // wakes the keeper after a change of flags or validity
	done     chan struct{} // closed when the keeper has exited

	relOnce   sync.Once // the release runs once per hold
	relErr    error
	releasing atomic.Bool // a release of this hold has started: a released item at our revision is ours

	reported atomic.Bool // the end below was reported by Release

	mu         sync.Mutex // guards the fields below
	ended      error      // why the lock ended the hold by itself, before Release
	validUntil time.Time  // monotonic: min(send time of the last applied renewal + lease - margin, deadline)
	renewOn    bool
	renewals   int
}

func (h *hold) valid(now time.Time) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return now.Before(h.validUntil)
}

// end records the first reason the hold ended without a Release call.
func (h *hold) end(cause error) {
	h.mu.Lock()
	if h.ended == nil {
		h.ended = cause
	}
	h.mu.Unlock()
}

// endedUnreported returns why the hold ended by itself, once.
func (h *hold) endedUnreported() error {
	h.mu.Lock()
	cause := h.ended
	h.mu.Unlock()
	if cause == nil || !h.reported.CompareAndSwap(false, true) {
		return nil
	}
	return cause
}

func (h *hold) renewing() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.renewOn
}

func (h *hold) setFlags(f func(*hold)) {
	h.mu.Lock()
	f(h)
	h.mu.Unlock()
	h.wake()
}

func (h *hold) wake() {
	select {
	case h.poke <- struct{}{}:
	default:
	}
}

// extend moves validity to until, capped at the hard maximum, if that is
// later: whatever renewals succeed, the holder never outlasts the
// ExpiresAtMs the item shows others.
func (h *hold) extend(until time.Time) {
	until = minTime(until, h.deadline)
	h.mu.Lock()
	if until.After(h.validUntil) {
		h.validUntil = until
	}
	h.renewals++
	h.mu.Unlock()
	h.wake()
}

// stopKeeper stops the keeper and waits for it to exit.
func (h *hold) stopKeeper() {
	h.stopOnce.Do(func() { close(h.stop) })
	<-h.done
}

// begin records a new hold of item, acquired by a request sent at sent, and
// starts its keeper.
func (l *Lock) begin(ctx context.Context, it storeapi.Item, sent time.Time, maxHold time.Duration, tookOver, afterFailure bool) *hold {
	hctx, cancel := context.WithCancelCause(ctx)
	deadline := sent.Add(maxHold - time.Duration(float64(maxHold)*l.o.drift))
	h := &hold{
		revision:     it.Revision,
		fence:        it.Fence,
		tookOver:     tookOver,
		afterFailure: afterFailure,
		attempt:      episodeAttempt(it),
		start:        sent,
		deadline:     deadline,
		expMs:        it.ExpiresAtMs,
		holdMean:     it.HoldMeanMs,
		holdDev:      it.HoldDevMs,
		parent:       ctx,
		ctx:          hctx,
		cancel:       cancel,
		stop:         make(chan struct{}),
		poke:         make(chan struct{}, 1),
		done:         make(chan struct{}),
		validUntil:   minTime(sent.Add(l.o.lease-l.validityMargin()), deadline),
		renewOn:      true,
	}
	l.mu.Lock()
	l.hold, l.last = h, h
	l.mu.Unlock()
	go l.keep(h)
	return h
}

// episodeAttempt returns the attempt number, from 1, of the holder that
// acquired it: one more than the failures of its episode while the last
// failure was recent when it acquired, else 1 (a new episode).
func episodeAttempt(it storeapi.Item) int64 {
	if it.Failures > 0 && it.FailRecentUntilMs >= it.HeartbeatAtMs {
		return it.Failures + 1
	}
	return 1
}

// keep is the keeper goroutine of h. It renews every renewInterval (once
// validity has reached the hard maximum, it checks the item at that pace
// instead, see renew), cancels the holder's
// context when validity (which never passes the hard maximum) runs out,
// whatever the network says, and releases the lock when it ends that way
// or when the context given to Acquire ends.
func (l *Lock) keep(h *hold) {
	defer close(h.done)
	interval := l.renewInterval()
	renewAt := h.start.Add(interval)
	failures := 0 // renewal attempts in a row that failed
	var timer *time.Timer
	for {
		now := time.Now()
		h.mu.Lock()
		validUntil, renewOn := h.validUntil, h.renewOn
		h.mu.Unlock()

		if !now.Before(validUntil) {
			l.expire(h, now)
			return
		}
		// Once validity reaches the hard maximum a renewal extends
		// nothing: the turn then checks the item instead (see renew).
		if renewOn && !now.Before(renewAt) {
			next, stop := l.renewTurn(h, validUntil, interval, &failures)
			if stop {
				return
			}
			renewAt = next
			continue
		}

		wakeAt := validUntil
		if renewOn && renewAt.Before(wakeAt) {
			wakeAt = renewAt
		}
		if timer == nil {
			timer = time.NewTimer(time.Until(wakeAt))
			defer timer.Stop()
		} else {
			timer.Reset(time.Until(wakeAt)) // Go 1.23+: no stale value to drain
		}
		select {
		case <-h.stop:
			return
		case <-h.parent.Done():
			l.logAt(slog.LevelDebug, "context of the lock holder ended, releasing", slog.Any("cause", context.Cause(h.parent)))
			l.abandon(h, context.Cause(h.parent))
			return
		case <-h.poke:
		case <-timer.C:
		}
	}
}

// expire ends h when its validity ran out at now: at the hard maximum, or
// earlier because no renewal succeeded in time.
func (l *Lock) expire(h *hold, now time.Time) {
	if !now.Before(h.deadline) {
		l.count(metricLockTimeout, 1)
		l.logAt(slog.LevelWarn, "lock maximum hold reached", slog.Int64("fence", h.fence))
		l.abandon(h, ErrMaxHoldReached)
		return
	}
	l.count(metricLeaseLost, 1)
	l.logAt(slog.LevelWarn, "lock lease ran out before a renewal succeeded", slog.Int64("fence", h.fence))
	l.abandon(h, ErrLeaseLost)
}

// renewTurn makes one renewal of the keeper and returns when the next one
// is due, or stop when the hold ended.
// failures counts the renewal attempts in a row that failed.
func (l *Lock) renewTurn(h *hold, validUntil time.Time, interval time.Duration, failures *int) (next time.Time, stop bool) {
	sent := time.Now()
	err := l.renew(h, validUntil)
	if took := time.Since(sent); took > interval {
		l.count(metricLongRenewalCall, 1)
		l.logAt(slog.LevelWarn, "lock renewal took longer than the renewal interval",
			slog.Duration("took", took), slog.Duration("interval", interval))
	}
	switch {
	case err == nil:
		*failures = 0
		return sent.Add(interval), false
	case errors.Is(err, ErrLeaseLost):
		return time.Time{}, true // renew dropped the hold and counted it
	case h.ctx.Err() != nil && errors.Is(context.Cause(h.ctx), ErrReleased):
		return time.Time{}, true
	case isRefusal(err):
		// Refused (a permission withdrawn, say): the same request would
		// be refused again at once, so try again on the schedule only,
		// in case the table is set right meanwhile.
		*failures++
		l.logAt(slog.LevelWarn, "lock renewal refused by the store", slog.String("error", err.Error()))
		return sent.Add(interval), false
	default:
		*failures++
		if isThrottled(err) {
			// Our own herd fills the item's write capacity: a renewal
			// gets through as soon as a unit is free.
			l.count(metricLockThrottled, 1)
			l.logAt(slog.LevelDebug, "lock renewal throttled, retrying", slog.Int("attempt", *failures))
		} else {
			l.logAt(slog.LevelWarn, "lock renewal failed, retrying", slog.Any("error", err))
		}
		if !validUntil.Before(h.deadline) {
			// A check (see renew): validity is not at stake, only seeing
			// a force-release, so keep the renewal pace rather than add
			// reads to a store that throttles or fails them.
			return sent.Add(interval), false
		}
		// Retry soon, but leave validity to the timer.
		return time.Now().Add(min(interval, holderRetryDelay(*failures))), false
	}
}

// abandon cancels the holder's context with cause and releases the lock as
// a failure, within the time the invocation has left.
func (l *Lock) abandon(h *hold, cause error) {
	h.end(cause)
	h.cancel(cause)
	if err := l.releaseHold(h.parent, h, Failure, "", releaseOptions{reason: reasonFor(cause)}, l.autoReleaseTimeout()); err != nil {
		l.logAt(slog.LevelWarn, "lock release after abort failed; the lease will lapse", slog.Any("error", err))
	}
}

// Renew renews the lease once, outside the auto-renewal schedule. It returns
// [ErrNotHeld] when the lock is not held and an error matching
// [ErrLeaseLost] when the item no longer carries our revision, or carries it
// released by somebody else (a force-release), in which case
// the holder's context is cancelled.
func (l *Lock) Renew(ctx context.Context) error {
	h := l.current()
	if h == nil {
		return ErrNotHeld
	}
	h.mu.Lock()
	validUntil := h.validUntil
	h.mu.Unlock()
	rctx, cancel := context.WithDeadline(ctx, validUntil)
	defer cancel()
	return l.renewWith(rctx, h)
}

// renew is the keeper's renewal: one attempt bounded by validity and by
// the call timeout (see calltimeout.go), and cancelled by Release. Once
// validity has reached the hard maximum, a renewal would extend nothing,
// and the turn is a consistent read instead (see check), so that a
// force-release in the last stretch of a hold is still seen within a
// renewal interval.
func (l *Lock) renew(h *hold, validUntil time.Time) error {
	stopped, cancel := context.WithCancel(context.WithoutCancel(h.ctx))
	defer cancel()
	go func() { // Release stops the keeper mid-renewal

		select {
		case <-h.stop:
			cancel()
		case <-stopped.Done():
		}
	}()
	return l.timedCallAllowing(stopped, validUntil, l.renewTimeout(), func(ctx context.Context) error {
		if !validUntil.Before(h.deadline) {
			return l.check(ctx, h)
		}
		return l.renewWith(ctx, h)
	})
}

// check is the keeper's turn once validity has reached the hard maximum:
// one strongly consistent read (a read unit, where a renewal that extends
// nothing would still cost a write unit and change the item) that finds
// the item still ours, or ends the hold as a refused renewal does (see
// lost): released at our revision by somebody else (a force-release), or
// carrying another revision, or gone.
func (l *Lock) check(ctx context.Context, h *hold) error {
	it, found, err := l.store.Get(ctx, l.key)
	switch {
	case err != nil:
		return fmt.Errorf("lockcore: check hold: %w", err)
	case found && it.Revision == h.revision && !it.Released:
		return nil
	}
	var cur *storeapi.Item
	if found {
		cur = &it
	}
	return l.lost(h, cur, errors.New("check: the item is no longer ours"))
}

func (l *Lock) renewWith(ctx context.Context, h *hold) error {
	nowMs := l.nowMs()
	// The lease never ends past the stored hard maximum, so the item never
	// tells others the holder is valid longer than it is.
	leaseUntil := min(nowMs+l.o.lease.Milliseconds(), h.expMs)
	sent := time.Now()
	_, err := l.store.Renew(ctx, storeapi.RenewRequest{Key: l.key, Revision: h.revision, NowMs: nowMs, LeaseUntilMs: leaseUntil})
	if err == nil {
		h.extend(sent.Add(l.o.lease - l.validityMargin()))
		return nil
	}
	var ce *storeapi.ConditionError
	if errors.As(err, &ce) {
		return l.lost(h, ce.Current, err)
	}
	return fmt.Errorf("lockcore: renew: %w", err)
}

// lost ends h after the store showed cur (nil: no item), which is not h's
// held item, in answer to a renewal or a check that failed with err.
func (l *Lock) lost(h *hold, cur *storeapi.Item, err error) error {
	if cur != nil && cur.Revision == h.revision && cur.Released {
		if h.releasing.Load() {
			return fmt.Errorf("lockcore: renew: %w", ErrReleased)
		}
		// Released at our revision by somebody else (an operator's
		// force-release): the lock is no longer ours, and the holder
		// writes nothing more, least of all a release over theirs.
		l.count(metricLeaseLost, 1)
		l.logAt(slog.LevelWarn, "lock force-released by somebody else; the holder stops", slog.Int64("fence", h.fence))
		h.end(ErrLeaseLost)
		l.drop(h, ErrLeaseLost)
		return fmt.Errorf("lockcore: renew: %w: released by somebody else: %w", ErrLeaseLost, err)
	}
	l.count(metricLeaseLost, 1)
	l.logAt(slog.LevelWarn, "lock taken by another holder", slog.Int64("fence", h.fence))
	h.end(ErrLeaseLost)
	l.drop(h, ErrLeaseLost)
	return fmt.Errorf("lockcore: renew: %w: %w", ErrLeaseLost, err)
}
