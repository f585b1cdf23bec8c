package httpmw

import (
	"math/rand/v2"
	"strconv"
	"time"
)

// maxRetryAfterSeconds bounds a Retry-After, as lockmw bounds the
// not-before a handler error can set.
const maxRetryAfterSeconds = 3600

// retryAfterUntil is the Retry-After for a retry no earlier than t, in
// whole seconds (RFC 9110 §10.2.3): see retryAfterFor.
func retryAfterUntil(t, now time.Time) int64 {
	if t.IsZero() {
		return retryAfterFor(0)
	}
	return retryAfterFor(t.Sub(now))
}

// retryAfterFor is the Retry-After for a wait of d: the whole seconds of d
// rounded up (at least 1, at most an hour), spread by up to half of that
// (at least 2 s), so that a herd told to come back does not come back in
// the same second, and none before d.
func retryAfterFor(d time.Duration) int64 {
	secs := int64(1)
	if d > time.Second {
		secs = int64((d + time.Second - 1) / time.Second)
	}
	secs = min(secs, maxRetryAfterSeconds)
	return secs + rand.Int64N(max(secs/2, 2)+1)
}

// retryAfter is the Retry-After header of secs.
func retryAfter(secs int64) map[string]string {
	return map[string]string{"Retry-After": strconv.FormatInt(secs, 10)}
}
