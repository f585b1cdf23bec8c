package lockcore

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/herdlock/herdlock/lockcore/storeapi"
)

// settleRead reads the item for settle: a first read on settleContext's
// budget, and, while reads fail (an error, a throttle, or no answer within
// the call timeout, as in a brownout), more reads until until or ctx's
// deadline (when neither is set, the first read's budget bounds them), no
// more after ctx ends or once the store refused one (see isRefusal). Each
// retry waits a poll interval, doubled for each failure up to
// 2^maxPaceShift times, with ±20% jitter, and allows the call timeout,
// which follows the store's latency (see calltimeout.go): a server slower
// than the attempt timeout still answers one of them.
func (l *Lock) settleRead(ctx context.Context, until time.Time) (storeapi.Item, bool, error) {
	first, cancel := l.settleContext(ctx)
	sent := time.Now()
	it, found, err := l.store.Get(first, l.key)
	cancel()
	l.learn(sent, 0, false, err) // its budget is settleContext's, not the call timeout
	var end time.Time            // zero: none
	if dl, ok := ctx.Deadline(); ok {
		end = dl
	}
	if end = minTime(end, until); end.IsZero() {
		end, _ = first.Deadline()
	}
	for n := 0; err != nil; n++ {
		if isThrottled(err) {
			l.count(metricLockThrottled, 1)
		}
		shift := min(n, maxPaceShift)
		wait := time.Duration(float64(l.o.pollInterval<<shift) * (0.8 + 0.4*rand.Float64()))
		if ctx.Err() != nil || isRefusal(err) || !time.Now().Add(wait).Before(end) {
			return storeapi.Item{}, false, err
		}
		if sleepCtx(ctx, wait) != nil {
			return storeapi.Item{}, false, err
		}
		err = l.timedCall(ctx, end, func(rctx context.Context) (err error) {
			it, found, err = l.store.Get(rctx, l.key)
			return err
		})
	}
	return it, found, nil
}

// free releases req, the write of an acquire that the lock may not hold,
// within a release's budget (see releaseContext), retrying failed attempts
// with the release backoff (see releaseBackoff), each attempt within the
// call timeout (see calltimeout.go). It returns nil when the item is
// free of that write: released, or not carrying it (a refused condition:
// the write was never applied, or was taken over since); otherwise the
// last attempt's error (a refusal, see isRefusal, ends the retries).
func (l *Lock) free(ctx context.Context, req storeapi.ReleaseRequest) error {
	rctx, cancel := l.releaseContext(ctx, l.autoReleaseTimeout())
	defer cancel()
	for n := 0; ; n++ {
		err := l.timedCall(rctx, time.Time{}, func(actx context.Context) error {
			_, err := l.store.Release(actx, req)
			return err
		})
		var ce *storeapi.ConditionError
		if err == nil || errors.As(err, &ce) {
			return nil
		}
		if isThrottled(err) {
			l.count(metricLockThrottled, 1)
		}
		if isRefusal(err) || sleepCtx(rctx, l.releaseBackoff(n)) != nil {
			return err
		}
		req.NowMs = l.nowMs()
	}
}
