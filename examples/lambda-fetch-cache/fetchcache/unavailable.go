package fetchcache

import (
	"context"
	"errors"
	"time"

	"github.com/herdlock/herdlock/lockcore"
)

// ErrUnavailable is matched by every [*UnavailableError].
var ErrUnavailable = errors.New("fetchcache: upstream unavailable")

// UnavailableError is the answer of an invocation that has no data because
// the upstream failed: its own call, when it held the lock, or the call of
// the holder it waited for, whose failure the lock shared with the burst.
// It names the item, the failure code and when to retry, and never holds
// the upstream's own text. Lambda reports it with errorType
// "UnavailableError".
//
// It carries the retry hints of package lockmw too (RetryAfter,
// FailureReason), so that a holder answering with it still tells the herd.
type UnavailableError struct {
	Pair string
	// Reason is the failure code, such as upstream_throttled (see
	// [CodeThrottled] and the other codes).
	Reason string
	// RetryAt is the earliest time at which a new request may reach the
	// upstream: for a shared failure, the lock's not-before
	// (lockcore.HolderFailedError.NotBefore: the upstream's Retry-After,
	// or the hold-back after the burst used up its attempts), so that a
	// request sent then is not refused by the lock; for this invocation's
	// own failure, the upstream's Retry-After. Zero when there is none.
	RetryAt time.Time
	// Shared is true when another invocation's call failed and the lock
	// passed its failure on, false when this invocation's own call failed.
	Shared bool
	cause  error
}

func (e *UnavailableError) Error() string {
	msg := "fetchcache: " + e.Pair + ": " + describeReason(e.Reason) + " (" + e.Reason + ")"
	if e.RetryAt.IsZero() {
		return msg + "; retry later"
	}
	return msg + "; retry after " + ceilSecond(e.RetryAt).UTC().Format(time.RFC3339)
}

// Unwrap returns the cause: the [*UpstreamError] of this invocation's own
// call, or the lockmw error that carries the lock's shared failure (it
// matches lockmw.ErrLockFailed and lockcore.ErrHolderFailed).
func (e *UnavailableError) Unwrap() error { return e.cause }

// Is makes errors.Is(err, ErrUnavailable) true.
func (e *UnavailableError) Is(target error) bool { return target == ErrUnavailable }

// RetryAfter returns the time from now until RetryAt, 0 when it is past or
// unknown.
func (e *UnavailableError) RetryAfter() time.Duration {
	if e.RetryAt.IsZero() {
		return 0
	}
	return max(time.Until(e.RetryAt), 0)
}

// FailureReason returns Reason.
func (e *UnavailableError) FailureReason() string { return e.Reason }

// describeReason words a failure code for the answer.
func describeReason(code string) string {
	switch code {
	case CodeThrottled:
		return "the upstream is throttled"
	case CodeUnavailable:
		return "the upstream is unavailable"
	case CodeTimeout:
		return "the upstream did not answer in time"
	case CodeBadAnswer:
		return "the upstream gave a bad answer"
	}
	return "fetching failed"
}

// ceilSecond rounds t up to a whole second, so that the time an answer
// names is never before the real one.
func ceilSecond(t time.Time) time.Time {
	if s := t.Truncate(time.Second); s.Before(t) {
		return s.Add(time.Second)
	}
	return t
}

// ownFailure turns the error of this invocation's upstream call into its
// answer: an [*UpstreamError] becomes an [*UnavailableError], with RetryAt
// from its wait; any other error is returned as it is.
func ownFailure(pair string, err error, now time.Time) error {
	var ue *UpstreamError
	if !errors.As(err, &ue) {
		return err
	}
	e := &UnavailableError{Pair: pair, Reason: ue.Code, cause: err}
	if ue.Wait > 0 {
		e.RetryAt = now.Add(ue.Wait)
	}
	return e
}

// sharedFailure is the answer of a waiter whose lock attempt ended FAILED
// (lockmw's OnFailed): when the holders of the burst failed
// (lockcore.ErrHolderFailed), an [*UnavailableError] with their reason and
// not-before; any other error is returned as it is.
func sharedFailure(pair string, err error) error {
	var hf *lockcore.HolderFailedError
	if !errors.As(err, &hf) {
		return err
	}
	return &UnavailableError{Pair: pair, Reason: hf.Reason, RetryAt: hf.NotBefore, Shared: true, cause: err}
}

// onFailed is the handler's lockmw OnFailed fallback.
func (a *app) onFailed(_ context.Context, req Request, err error) (Response, error) {
	return Response{}, sharedFailure(req.Pair, err)
}
