package lockcore

import (
	"context"
	"time"

	"github.com/herdlock/herdlock/lockcore/storeapi"
)

// firstStep is what TryAcquireElseWaitForRelease does after its first
// request.
type firstStep int

const (
	stepAcquire  firstStep = iota // make the conditional write
	stepWait                      // wait: the lock is held, or the store throttled us
	stepReleased                  // read the fresh success
)

// readFirst is the first request of [Herd].ReadFirst: one strongly
// consistent read, ending by until (when not zero) and within one call
// timeout (see calltimeout.go). A lock held by a live holder is waited for
// without a write, a fresh success is returned, and a read that was
// throttled (a herd is on the item) or got no answer in time (a slow
// table, where every invocation writing would only add to the load) leads
// to waiting too: the wait reads again. A refusal (see [ErrStoreRefused])
// is returned as it is, for the call to fail at once. Anything else
// (absent, released, lapsed, or another store error) goes on to the
// conditional write, which decides on the item as it then is.
func (l *Lock) readFirst(ctx context.Context, until time.Time) (firstStep, *storeapi.Item, error) {
	var it storeapi.Item
	var found bool
	err := l.timedCall(ctx, until, func(rctx context.Context) (err error) {
		it, found, err = l.store.Get(rctx, l.key)
		return err
	})
	switch {
	case err != nil && isThrottled(err):
		l.count(metricLockThrottled, 1)
		return stepWait, nil, err
	case err != nil && isRefusal(err):
		return stepAcquire, nil, err
	case err != nil && isTimeout(err) && ctx.Err() == nil:
		return stepWait, nil, err
	case err != nil || !found:
		return stepAcquire, nil, nil
	case it.Released && it.Result == Success && l.freshSuccess(it):
		return stepReleased, &it, nil
	case it.Released:
		return stepAcquire, nil, nil
	case l.o.useWallClock && l.lapsed(it):
		return stepAcquire, nil, nil
	}
	return stepWait, &it, nil
}

// freshSuccess reports whether it, released with Success, is fresh by
// [WithFreshSuccess].
func (l *Lock) freshSuccess(it storeapi.Item) bool {
	return l.o.freshSuccess > 0 && it.ReleasedAtMs >= l.nowMs()-l.o.freshSuccess.Milliseconds()
}

// lapsed reports whether it's lease or hard maximum ended more than the
// clock allowance ago, by this host's wall clock.
func (l *Lock) lapsed(it storeapi.Item) bool {
	limit := l.nowMs() - l.o.clockAllowance.Milliseconds()
	return it.LeaseUntilMs < limit || it.ExpiresAtMs < limit
}
