package httpmw

import (
	"context"
	"errors"
	"net"
	"net/http"

	"github.com/aws/smithy-go"
	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/middleware/lockmw"
)

// Failure reasons of error answers that lockmw.ErrorReason does not name,
// as the problem body's "code" member carries them. docs/fronts.md lists
// them (section "Failure reasons of the error answers"), and a test ties
// that list to these values.
const (
	reasonBadRequest  = "bad_request"   // no usable key in the request, or the handler's ErrBadRequest
	reasonKeyTooLong  = "key_too_long"  // the key is over the partition-key limit
	reasonConfig      = "configuration" // the adapter, the middleware or the lock table is misconfigured
	reasonNoAnswer    = "no_answer"     // the holder's success came without a usable answer
	reasonLockFailed  = "lock_failed"   // the lock could not be taken nor waited for
	reasonNoTimeLeft  = "no_time_left"  // too little time left to take the lock
	reasonHandlerFail = "error"         // the handler failed with no reason of its own
	reasonInternal    = "internal"      // the handler panicked
)

// failure maps the error of an invocation to its error answer.
func (c *core[Req, T]) failure(err error) reply {
	now := c.now()
	var se *statusError
	var ue *unsharedError
	switch {
	case errors.As(err, &se):
		return plainReply(se.a) // the holder's own 5xx, for its client only
	case errors.As(err, &ue):
		return plainReply(ue.a) // the answer to the holder's own preconditions or range
	case errors.Is(err, lockcore.ErrConfig):
		return problemReply(http.StatusInternalServerError, reasonConfig, nil)
	case errors.Is(err, lockmw.ErrHandlerPanicked):
		return problemReply(http.StatusInternalServerError, reasonInternal, nil)
	case errors.Is(err, errKeyTooLong):
		return problemReply(http.StatusBadRequest, reasonKeyTooLong, nil)
	case errors.Is(err, lockmw.ErrKey), errors.Is(err, ErrBadRequest), errors.Is(err, lockmw.ErrBadInput):
		return problemReply(http.StatusBadRequest, reasonBadRequest, nil)
	}
	var hf *lockcore.HolderFailedError
	if errors.As(err, &hf) {
		// The holders of this burst failed: the shared failure's reason
		// and not-before, the same for every waiter.
		status := http.StatusServiceUnavailable
		if isThrottleReason(hf.Reason) {
			status = http.StatusTooManyRequests
		}
		return problemReply(status, hf.Reason, retryAfter(retryAfterUntil(hf.NotBefore, now)))
	}
	switch {
	case errors.Is(err, lockmw.ErrLockFailed):
		return c.lockFailure(err)
	case errors.Is(err, lockmw.ErrNoAnswer) && passingStoreError(err):
		// The answer store failed to give the answer back, as a store
		// may for a moment.
		return problemReply(http.StatusServiceUnavailable, reasonNoAnswer, retryAfter(retryAfterFor(0)))
	case errors.Is(err, lockmw.ErrNoAnswer):
		// The holder published success without an answer this
		// configuration carries: retrying soon meets the same.
		return problemReply(http.StatusInternalServerError, reasonNoAnswer, nil)
	case errors.Is(err, lockcore.ErrNoTimeLeft):
		return problemReply(http.StatusServiceUnavailable, reasonNoTimeLeft, retryAfter(retryAfterFor(0)))
	}
	return c.handlerFailure(err)
}

// lockFailure is the answer when the lock could not be taken nor waited
// for: 503 with Retry-After for what passes (a wait that ran out, a
// throttled or failing store), 500 for a lock table that cannot work (no
// table, no permission). A store's error code never reaches the client.
func (c *core[Req, T]) lockFailure(err error) reply {
	if permanentStoreError(err) {
		return problemReply(http.StatusInternalServerError, reasonConfig, nil)
	}
	code := publicCode(err)
	if code == reasonHandlerFail {
		code = reasonLockFailed
	}
	return problemReply(http.StatusServiceUnavailable, code, retryAfter(retryAfterFor(0)))
}

// handlerFailure is the answer of the holder whose handler failed: 502,
// or, when the error carries lockmw's retry hints, what its waiters
// answer for the failure it publishes (429 for a throttle, 503 with a
// not-before), with Retry-After.
func (c *core[Req, T]) handlerFailure(err error) reply {
	code := publicCode(err)
	var ra lockmw.RetryAfterer
	hinted := errors.As(err, &ra)
	switch {
	case isThrottleReason(code):
		d := retryAfterFor(0)
		if hinted {
			d = retryAfterFor(ra.RetryAfter())
		}
		return problemReply(http.StatusTooManyRequests, code, retryAfter(d))
	case hinted && ra.RetryAfter() > 0:
		return problemReply(http.StatusServiceUnavailable, code, retryAfter(retryAfterFor(ra.RetryAfter())))
	}
	return problemReply(http.StatusBadGateway, code, nil)
}

// publicCode is lockmw.ErrorReason(err) unless that is an AWS API error's
// code (a store's, or one the handler passed on), which is the generic
// "error": such codes name the function's infrastructure, not the
// client's request.
func publicCode(err error) string {
	code := lockmw.ErrorReason(err)
	var ae smithy.APIError
	if errors.As(err, &ae) && code == ae.ErrorCode() {
		return reasonHandlerFail
	}
	return code
}

// transientClientCodes are the AWS API errors of the client fault that
// pass: throttles and conflicts.
var transientClientCodes = map[string]bool{
	"ThrottlingException": true, "ProvisionedThroughputExceededException": true, "RequestLimitExceeded": true,
	"LimitExceededException": true, "TransactionConflictException": true, "TransactionInProgressException": true,
	"RequestTimeout": true, "RequestTimeoutException": true, "ExpiredTokenException": true,
}

// passingStoreError reports whether err is a store's failure that a retry
// may not meet: an AWS API error other than a permanent one, or a
// timeout.
func passingStoreError(err error) bool {
	var ae smithy.APIError
	var ne net.Error
	switch {
	case errors.As(err, &ae):
		return !permanentStoreError(err)
	case errors.As(err, &ne):
		return ne.Timeout()
	}
	return errors.Is(err, context.DeadlineExceeded)
}

// permanentStoreError reports whether err is an AWS API error that a
// retry meets again: a client fault other than a throttle or a conflict,
// such as AccessDeniedException or ResourceNotFoundException.
func permanentStoreError(err error) bool {
	var ae smithy.APIError
	return errors.As(err, &ae) && ae.ErrorFault() == smithy.FaultClient && !transientClientCodes[ae.ErrorCode()]
}
