package httpmw

import (
	"math/rand/v2"
	"strconv"
	"time"
)

// maxRetryAfterSeconds bounds the Retry-After of a wait that names no
// time of its own (a handler's hint: lockmw bounds the not-before it sets
// to the same hour); a shared failure's not-before, which a lock's
// hold-back may put hours away, is never cut.
const maxRetryAfterSeconds = 3600

// retryAfterUntil is the Retry-After for a retry no earlier than t, in
// whole seconds (RFC 9110 §10.2.3): the seconds until t rounded up (at
// least 1), spread as retryAfterFor spreads them.
func retryAfterUntil(t, now time.Time) int64 {
	if t.IsZero() {
		return retryAfterFor(0)
	}
	return spread(ceilSeconds(t.Sub(now)))
}

// retryAfterFor is the Retry-After for a wait of d: the whole seconds of d
// rounded up (at least 1, at most an hour), spread by up to half of that
// (at least 2 s), so that a herd told to come back does not come back in
// the same second, and none before d.
func retryAfterFor(d time.Duration) int64 {
	return spread(min(ceilSeconds(d), maxRetryAfterSeconds))
}

// ceilSeconds is d in whole seconds, rounded up, at least 1.
func ceilSeconds(d time.Duration) int64 {
	if d <= time.Second {
		return 1
	}
	return int64((d + time.Second - 1) / time.Second)
}

// spread is secs plus up to half of it (at least 2 s) at random.
func spread(secs int64) int64 {
	return secs + rand.Int64N(max(secs/2, 2)+1)
}

// retryAfter is the Retry-After header of secs.
func retryAfter(secs int64) map[string]string {
	return map[string]string{"Retry-After": strconv.FormatInt(secs, 10)}
}
