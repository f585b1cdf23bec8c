package httpmw

import (
	"errors"
	"net/http"

	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/middleware/lockmw"
)

// Failure codes of error answers that lockmw.ErrorCode does not name.
const (
	CodeBadRequest  = "bad_request"   // no usable key in the request
	CodeKeyTooLong  = "key_too_long"  // the key is over the partition-key limit
	CodeConfig      = "configuration" // the adapter or the middleware is misconfigured
	CodeNoAnswer    = "no_answer"     // the holder's success came without a usable answer
	CodeLockFailed  = "lock_failed"   // the lock could not be taken nor waited for
	CodeNoTimeLeft  = "no_time_left"  // too little time left to take the lock
	CodeHandlerFail = "error"         // the handler failed with no code of its own
)

// failure maps the error of an invocation to its error answer.
func (c *core[Req, T]) failure(err error) reply {
	now := c.now()
	switch {
	case errors.Is(err, lockmw.ErrConfig), errors.Is(err, lockmw.ErrNoAccount):
		return problemReply(http.StatusInternalServerError, CodeConfig, nil)
	case errors.Is(err, ErrKeyTooLong):
		return problemReply(http.StatusBadRequest, CodeKeyTooLong, nil)
	case errors.Is(err, lockmw.ErrKey):
		return problemReply(http.StatusBadRequest, CodeBadRequest, nil)
	}
	var hf *lockcore.HolderFailedError
	if errors.As(err, &hf) {
		// The holders of this burst failed: the shared failure's reason
		// and not-before, the same for every waiter.
		status := http.StatusServiceUnavailable
		if c.o.throttled(hf.Reason) {
			status = http.StatusTooManyRequests
		}
		return problemReply(status, hf.Reason, map[string]string{"Retry-After": retryAfterUntil(hf.NotBefore, now)})
	}
	switch {
	case errors.Is(err, lockmw.ErrLockFailed):
		code := lockmw.ErrorCode(err)
		if code == "error" {
			code = CodeLockFailed
		}
		return problemReply(http.StatusServiceUnavailable, code, map[string]string{"Retry-After": "1"})
	case errors.Is(err, lockmw.ErrNoAnswer):
		return problemReply(http.StatusServiceUnavailable, CodeNoAnswer, map[string]string{"Retry-After": "1"})
	case errors.Is(err, lockmw.ErrNoTimeLeft):
		return problemReply(http.StatusServiceUnavailable, CodeNoTimeLeft, map[string]string{"Retry-After": "1"})
	}
	return c.handlerFailure(err)
}

// handlerFailure is the answer of the holder whose handler failed: 502,
// or, when the error carries lockmw's retry hints, what its waiters
// answer for the failure it publishes (429 for a throttle, 503 with a
// not-before), with the same Retry-After.
func (c *core[Req, T]) handlerFailure(err error) reply {
	code := lockmw.ErrorCode(err)
	var ra lockmw.RetryAfterer
	hinted := errors.As(err, &ra)
	switch {
	case c.o.throttled(code):
		var d = retryAfterFor(0)
		if hinted {
			d = retryAfterFor(ra.RetryAfter())
		}
		return problemReply(http.StatusTooManyRequests, code, map[string]string{"Retry-After": d})
	case hinted && ra.RetryAfter() > 0:
		return problemReply(http.StatusServiceUnavailable, code, map[string]string{"Retry-After": retryAfterFor(ra.RetryAfter())})
	}
	return problemReply(http.StatusBadGateway, code, nil)
}
