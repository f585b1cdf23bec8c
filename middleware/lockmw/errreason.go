package lockmw

import (
	"context"
	"errors"
	"regexp"

	"github.com/aws/smithy-go"
	"github.com/herdlock/herdlock/lockcore"
)

// ErrorReason returns a short reason for err that is safe to record in a trace
// or a metric, where err's text is not: that may carry an upstream's
// answer or a request's payload. The reason is, in this order of preference:
//
//   - the FailureReason() of an error in err's chain that has one, when it
//     matches [a-z0-9_.-]{1,64};
//   - the error code of an AWS API error (smithy.APIError), such as
//     ConditionalCheckFailedException or ThrottlingException;
//   - a name for a sentinel of lockcore or lockmw, or of the context
//     package: "wait_timeout", "lease_lost", "max_hold_reached",
//     "release_failed", "not_held", "aborted", "no_time_left",
//     "deadline_exceeded", "canceled", "lock_failed";
//   - "panic" for a handler that panicked;
//   - "error" otherwise.
//
// It returns "" for a nil err. It is safe for concurrent use.
func ErrorReason(err error) string {
	if err == nil {
		return ""
	}
	var fc interface{ FailureReason() string }
	if errors.As(err, &fc) {
		if c := fc.FailureReason(); failureCode.MatchString(c) {
			return c
		}
	}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		if c := ae.ErrorCode(); apiCode.MatchString(c) {
			return c
		}
	}
	for _, s := range sentinelCodes {
		if errors.Is(err, s.err) {
			return s.code
		}
	}
	return "error"
}

var (
	failureCode = regexp.MustCompile(`^[a-z0-9_.-]{1,64}$`)
	apiCode     = regexp.MustCompile(`^[A-Za-z0-9_.:-]{1,64}$`)
)

// sentinelCodes are tried in order: the more specific cause first.
var sentinelCodes = [...]struct {
	err  error
	code string
}{
	{errPanicked, "panic"},
	{lockcore.ErrWaitTimeout, "wait_timeout"},
	{lockcore.ErrLeaseLost, "lease_lost"},
	{lockcore.ErrMaxHoldReached, "max_hold_reached"},
	{lockcore.ErrReleaseFailed, "release_failed"},
	{lockcore.ErrNotHeld, "not_held"},
	{lockcore.ErrAborted, "aborted"},
	{lockcore.ErrNoTimeLeft, "no_time_left"},
	{context.DeadlineExceeded, "deadline_exceeded"},
	{context.Canceled, "canceled"},
	{ErrLockFailed, "lock_failed"},
}
