package lockcore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/herdlock/herdlock/lockcore/storeapi"
)

// Release stops renewal, then publishes result and ref on the item and frees
// the lock, retrying with capped exponential backoff and jitter within the
// time the invocation has left, each attempt bounded by the call timeout,
// which follows the store's latency (never below [StoreCalls].AttemptTimeout);
// throttled attempts, and attempts that got no answer in time (a
// brownout: the next attempt allows twice as long), are retried sooner and do not count against the release attempts (the
// release timeout bounds them). Publish [Success] only after the data that
// waiters will read is stored, or with that data itself ([WithAnswer]):
// waiters that see it read it instead of fetching again. [Failure] lets one
// waiter take over, not before the time given with [WithNotBefore], and
// only while the failure episode has had fewer than [FailureEpisode]
// failed attempts; its reason code ([WithFailureReason]) is what waiters
// that give up are told.
//
// Release returns an error matching [ErrLeaseLost] when another holder has
// the lock or an operator force-released it (nothing is published), and one matching [ErrReleaseFailed] when
// every attempt failed; the lease then lapses on its own. A retried release
// whose first attempt was applied, its response lost, returns nil, even
// after a newcomer has acquired the lock since. When the lock had already
// ended the hold by itself (lease lost, maximum hold reached, or the
// context given to Acquire ended), result was not published: Release
// returns an error wrapping that cause, once. Otherwise it returns nil when
// the lock is not held. In every case but one the lock is no longer held
// afterwards and the holder's context is cancelled; the exception is
// invalid options (an answer over [MaxAnswerBytes], matching
// [ErrAnswerTooLarge], or an answer with Failure), refused before anything
// is written, with the lock still held.
func (l *Lock) Release(ctx context.Context, result Result, ref string, opts ...ReleaseOption) error {
	if !result.Valid() {
		return fmt.Errorf("lockcore: release: result must be %q or %q, got %q", Success, Failure, result)
	}
	o, err := releaseOptionsOf(result, opts)
	if err != nil {
		return err
	}
	h := l.current()
	if h == nil {
		l.mu.Lock()
		h = l.last
		l.mu.Unlock()
		if h == nil {
			return nil
		}
		if cause := h.endedUnreported(); cause != nil {
			return fmt.Errorf("lockcore: release: the lock ended before release: %w", cause)
		}
		return nil
	}
	h.stopKeeper()
	err = l.releaseHold(ctx, h, result, ref, o, l.o.releaseTimeout)
	if cause := h.endedUnreported(); cause != nil {
		return errors.Join(fmt.Errorf("lockcore: release: the lock ended before release: %w", cause), err)
	}
	return err
}

// releaseHold releases h once, within budget (see releaseContext); later
// calls return the first call's error.
func (l *Lock) releaseHold(ctx context.Context, h *hold, result Result, ref string, o releaseOptions, budget time.Duration) error {
	h.releasing.Store(true)
	h.relOnce.Do(func() { h.relErr = l.doRelease(ctx, h, result, ref, o, budget) })
	return h.relErr
}

func (l *Lock) doRelease(ctx context.Context, h *hold, result Result, ref string, o releaseOptions, budget time.Duration) error {
	start := time.Now()
	ctx, cancel := l.releaseContext(ctx, budget)
	defer cancel()
	defer func() {
		h.mu.Lock()
		renewals := h.renewals
		h.mu.Unlock()
		l.count(metricLockRenewal, float64(renewals))
		l.millis(metricLockReleaseDuration, time.Since(start))
	}()

	req := l.releaseRequest(h, result, ref, o, l.nowMs())
	var lastErr error
	// Attempts that failed; of those, throttled ones, and ones that got no
	// answer within their timeout while the release's budget lasted.
	failures, throttles, slow := 0, 0, 0
	// lastThrottled: the last attempt was throttled; throttledSince: when
	// the release's first throttled attempt returned.
	lastThrottled, throttledSince := false, time.Time{}
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			// A throttle means our own herd fills the item's write
			// capacity, and a timeout a server slower than the attempt
			// timeout (a brownout): retry soon, and without using up the
			// attempts meant for failures of the store; the release's
			// budget bounds them.
			wait := holderRetryDelay(throttles + slow)
			if lastThrottled && time.Since(throttledSince) < releaseRaceFor {
				wait = releaseRaceDelay(throttles)
			}
			if hard := failures - throttles - slow; hard > 0 {
				wait = max(wait, l.releaseBackoff(hard-1))
			}
			if err := sleepCtx(ctx, wait); err != nil {
				break
			}
			req.NowMs = l.nowMs()
		}
		// In a brownout, the call timeout follows the store's latency
		// (see calltimeout.go): a longer attempt gets the answer.
		err := l.timedCall(ctx, time.Time{}, func(actx context.Context) error {
			_, err := l.store.Release(actx, req)
			return err
		})
		if err == nil {
			l.millis(metricLockHoldDuration, time.Since(h.start))
			l.logAt(slog.LevelDebug, "lock released", slog.Int64("fence", h.fence), slog.String("result", string(result)))
			l.drop(h, ErrReleased)
			return nil
		}
		var ce *storeapi.ConditionError
		if errors.As(err, &ce) {
			return l.releaseRefused(h, ce, err)
		}
		lastErr = err
		failures++
		lastThrottled = isThrottled(err)
		switch {
		case isThrottled(err):
			if throttles == 0 {
				throttledSince = time.Now()
			}
			throttles++
			l.count(metricLockThrottled, 1)
		case isTimeout(err) && ctx.Err() == nil:
			slow++
		}
		l.logAt(slog.LevelDebug, "lock release attempt failed", slog.Int("attempt", attempt+1), slog.Any("error", err))
		if ctx.Err() != nil || isRefusal(err) || failures-throttles-slow >= l.o.releaseAttempts {
			break
		}
	}
	l.drop(h, ErrReleaseFailed)
	return fmt.Errorf("%w: %w", ErrReleaseFailed, lastErr)
}

// releaseRefused handles a release whose condition failed: another holder
// has the lock, an operator force-released it, or an earlier call published
// another result.
func (l *Lock) releaseRefused(h *hold, ce *storeapi.ConditionError, err error) error {
	if ce.Current == nil || ce.Current.Revision != h.revision {
		l.count(metricLeaseLost, 1)
		l.drop(h, ErrLeaseLost)
		return fmt.Errorf("lockcore: release: %w: %w", ErrLeaseLost, err)
	}
	if ce.Current.Released && ce.Current.FailReason == storeapi.OperatorReleaseReason {
		// Our revision, force-released by an operator: that release
		// stands, and nothing of ours is published.
		l.count(metricLeaseLost, 1)
		l.drop(h, ErrLeaseLost)
		return fmt.Errorf("lockcore: release: released by an operator: %w: %w", ErrLeaseLost, err)
	}
	// Our revision, released with another result: an earlier call
	// published already, and that publication stands.
	l.drop(h, ErrReleased)
	return fmt.Errorf("lockcore: release: already released with result %q: %w", ce.Current.Result, err)
}

// releaseContext returns a context for releasing that survives the
// cancellation of ctx (a release must run even after the holder's work was
// cancelled) but not the invocation: it ends at ctx's deadline or after
// budget (the release timeout of a Release, see autoReleaseTimeout for the
// lock's own), whichever comes first.
func (l *Lock) releaseContext(ctx context.Context, budget time.Duration) (context.Context, context.CancelFunc) {
	if dl, ok := ctx.Deadline(); ok {
		budget = min(budget, time.Until(dl))
	}
	// One attempt is always made, however little time is left.
	budget = max(budget, 100*time.Millisecond)
	return context.WithTimeout(context.WithoutCancel(ctx), budget)
}

// releaseBackoff returns the wait after failed attempt n (from 0): capped
// exponential from maxBackoff/attempts, plus up to 100ms of jitter.
func (l *Lock) releaseBackoff(n int) time.Duration {
	base := l.o.releaseMaxBackoff / time.Duration(l.o.releaseAttempts)
	d := min(base<<min(n, 30), l.o.releaseMaxBackoff)
	return d + rand.N(100*time.Millisecond+1)
}

// sleepCtx waits d or until ctx ends, returning ctx's cause in that case.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-t.C:
		return nil
	}
}

// autoReleaseTimeout bounds the releases the lock makes by itself (at the
// end of its lease or maximum hold, and freeing a late copy of an
// acquire) and the settling read: [StoreCalls].AutoReleaseTimeout, or the
// release timeout when it is not set.
func (l *Lock) autoReleaseTimeout() time.Duration {
	if l.o.autoRelease > 0 {
		return l.o.autoRelease
	}
	return l.o.releaseTimeout
}
