package httpmw

import (
	"strconv"
	"time"
)

// maxRetryAfterSeconds bounds a Retry-After, as lockmw bounds the
// not-before a handler error can set.
const maxRetryAfterSeconds = 3600

// retryAfterUntil is the Retry-After for a retry no earlier than t: the
// whole seconds from now to t, rounded up, at least 1. A zero t gives 1.
func retryAfterUntil(t, now time.Time) string {
	if t.IsZero() {
		return "1"
	}
	return retryAfterFor(t.Sub(now))
}

// retryAfterFor is the Retry-After for a wait of d: whole seconds, rounded
// up, at least 1 and at most an hour.
func retryAfterFor(d time.Duration) string {
	secs := int64(1)
	if d > time.Second {
		secs = int64((d + time.Second - 1) / time.Second)
	}
	return strconv.FormatInt(min(secs, maxRetryAfterSeconds), 10)
}
