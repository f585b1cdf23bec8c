package lockmw

import (
	"errors"
	"time"

	"github.com/herdlock/herdlock/lockcore"
)

// RetryAfterer is the retry hint of a handler error: an error from the
// handler that holds the lock, or one it wraps, that implements it sets the
// not-before time of the lock's failure release to now plus RetryAfter
// (lockcore.WithNotBefore). Until then no waiter or newcomer of the burst
// takes the lock over to try again, and those that cannot wait that long
// end at once with an error matching [ErrLockFailed] and
// lockcore.ErrHolderFailed that carries the time. Give it to the error of
// an upstream call that answered 429 or 503 with a Retry-After. A zero or
// negative duration sets no not-before; one longer than an hour is read as
// an hour.
type RetryAfterer interface {
	RetryAfter() time.Duration
}

// FailureReasoner is the reason hint of a handler error: an error from the
// handler that holds the lock, or one it wraps, that implements it sets the
// reason of the lock's failure release (lockcore.WithFailureReason), which
// waiters find in their lockcore.HolderFailedError. The reason is
// published for every invocation of the burst to read, so it must be a
// short fixed string such as "upstream_throttled", never error text:
// lockcore replaces anything outside [a-z0-9_.-]{1,64} with "unspecified".
// Without it, or when it returns "", the reason is "handler_error" (and
// "handler_panic" after a panic).
type FailureReasoner interface {
	FailureReason() string
}

// Reasons of the failure releases lockmw makes without a
// [FailureReasoner].
const (
	// reasonHandlerError: the handler returned an error.
	reasonHandlerError = "handler_error"
	// reasonHandlerPanic: the handler panicked.
	reasonHandlerPanic = "handler_panic"
)

// maxRetryAfter bounds the not-before a [RetryAfterer] can set.
const maxRetryAfter = time.Hour

// failureOptions returns the release options of a failure with the handler
// error err (nil after a panic), at now.
func failureOptions(err error, now time.Time) []lockcore.ReleaseOption {
	if err == nil {
		return []lockcore.ReleaseOption{lockcore.WithFailureReason(reasonHandlerPanic)}
	}
	if errors.Is(err, ErrBadInput) {
		return []lockcore.ReleaseOption{lockcore.WithKeepEpisode()}
	}
	reason := reasonHandlerError
	var fc FailureReasoner
	if errors.As(err, &fc) && fc.FailureReason() != "" {
		reason = fc.FailureReason()
	}
	opts := []lockcore.ReleaseOption{lockcore.WithFailureReason(reason)}
	var ra RetryAfterer
	if errors.As(err, &ra) {
		if d := min(ra.RetryAfter(), maxRetryAfter); d > 0 {
			opts = append(opts, lockcore.WithNotBefore(now.Add(d)))
		}
	}
	return opts
}
