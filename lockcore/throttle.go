package lockcore

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"
)

// Pacing under throttling.
const (
	// maxPaceShift bounds how far throttled polls stretch the poll
	// interval: at most 2^maxPaceShift times.
	maxPaceShift = 2
	// retryBase and retryCap bound the short, jittered wait before a
	// holder retries a throttled or failed renewal or release attempt.
	retryBase = 10 * time.Millisecond
	retryCap  = 100 * time.Millisecond
	// A throttled release races its own herd for the item's write
	// capacity: invocations that arrive faster than the capacity refills
	// take each token soon after it is there, so a release retried every
	// 10-100 ms wins only when the arrivals end, and the whole herd waits
	// for it. For its first releaseRaceFor of throttling, a release retries
	// within raceCap instead (a few hundred requests a second at most,
	// from the one holder).
	raceBase       = time.Millisecond
	raceCap        = 4 * time.Millisecond
	releaseRaceFor = time.Second
)

func isThrottled(err error) bool { return errors.Is(err, ErrThrottled) }

// holderRetryDelay is the wait before a holder's retry after n failed
// attempts in a row (from 1): see backoffDelay, from retryBase to retryCap.
func holderRetryDelay(n int) time.Duration { return backoffDelay(retryBase, retryCap, n) }

// backoffDelay is the wait after n failed attempts in a row (from 1):
// capped exponential from base to limit, times U(0.5, 1.5).
func backoffDelay(base, limit time.Duration, n int) time.Duration {
	d := min(base<<min(max(n-1, 0), 10), limit)
	return time.Duration(float64(d) * (0.5 + rand.Float64()))
}

// isTimeout reports whether err is a store call that got no answer in
// time: its own deadline (an attempt timeout) or its transport's timeout.
// A server slower than the attempt timeout (a brownout) answers so: the
// call may have been applied, and the server may answer the next one.
func isTimeout(err error) bool {
	var te interface{ Timeout() bool }
	return errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &te) && te.Timeout())
}

// releaseRaceDelay is the wait before a throttled release's retry after
// its n-th throttled attempt (from 1): see backoffDelay, from raceBase to
// raceCap.
func releaseRaceDelay(n int) time.Duration { return backoffDelay(raceBase, raceCap, n) }
