package lockcore

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"
)

// settleRead reads the item for settle: a first read on settleContext's
// budget, and, while reads fail (an error, a throttle, or no answer within
// the attempt's timeout, as in a brownout), more reads until until or
// ctx's deadline (when neither is set, the first read's budget bounds
// them), no more after ctx ends. Each retry waits a poll interval,
// doubled for each failure up to 2^maxPaceShift times, with ±20% jitter,
// and allows the attempt timeout, doubled likewise: a server slower than
// the attempt timeout still answers one of them.
func (l *Lock) settleRead(ctx context.Context, until time.Time) (Item, bool, error) {
	first, cancel := l.settleContext(ctx)
	it, found, err := l.store.Get(first, l.key)
	cancel()
	var end time.Time // zero: none
	if dl, ok := ctx.Deadline(); ok {
		end = dl
	}
	if end = minTime(end, until); end.IsZero() {
		end, _ = first.Deadline()
	}
	for n := 0; err != nil; n++ {
		if isThrottled(err) {
			l.count(MetricLockThrottled, 1)
		}
		shift := min(n, maxPaceShift)
		wait := time.Duration(float64(l.o.pollInterval<<shift) * (0.8 + 0.4*rand.Float64()))
		if ctx.Err() != nil || !time.Now().Add(wait).Before(end) {
			return Item{}, false, err
		}
		if sleepCtx(ctx, wait) != nil {
			return Item{}, false, err
		}
		rctx, cancel := context.WithDeadline(ctx, minTime(end, time.Now().Add(l.o.attemptTimeout<<shift)))
		it, found, err = l.store.Get(rctx, l.key)
		cancel()
	}
	return it, found, nil
}

// free releases req, the write of an acquire that the lock may not hold,
// within a release's budget (see releaseContext), retrying failed attempts
// with the release backoff (see releaseBackoff) and attempt timeouts that
// double up to four times the attempt timeout. It reports whether the item
// is free of that write: released, or not carrying it (a refused
// condition: the write was never applied, or was taken over since).
func (l *Lock) free(ctx context.Context, req ReleaseRequest) bool {
	rctx, cancel := l.releaseContext(ctx)
	defer cancel()
	for n := 0; ; n++ {
		actx, cancelAttempt := context.WithTimeout(rctx, l.o.attemptTimeout<<min(n, 2))
		_, err := l.store.Release(actx, req)
		cancelAttempt()
		var ce *ConditionError
		if err == nil || errors.As(err, &ce) {
			return true
		}
		if isThrottled(err) {
			l.count(MetricLockThrottled, 1)
		}
		if errors.Is(err, ErrItemTooLarge) || sleepCtx(rctx, l.releaseBackoff(n)) != nil {
			return false
		}
		req.NowMs = l.nowMs()
	}
}
