package lockcore

import (
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/smithy-go"

	"github.com/herdlock/herdlock/lockcore/storeapi"
)

// A refusal is a store error that proves the request was not applied and
// that the same request would be refused again at once (see
// [ErrStoreRefused]): an acquire refused so is not settled, a wait that
// meets one ends, a release stops retrying. Only an unknown outcome (a
// 5xx, a lost answer, a timeout) is settled and retried.

// isRefusal reports whether err is a refusal: one matching
// [ErrStoreRefused], or [storeapi.ErrItemTooLarge] (DynamoDB's ValidationException
// for an item over its size limit).
func isRefusal(err error) bool {
	return errors.Is(err, ErrStoreRefused) || errors.Is(err, storeapi.ErrItemTooLarge)
}

// refused ends TryAcquireElseWaitForRelease's first step with a refusal.
func (l *Lock) refused(err error) (WaitResult, error) {
	l.count(metricLockAcquisitionSuccess, 0)
	l.count(metricLockAcquisitionError, 1)
	l.count(metricLockAcquisitionFailed, 1)
	var ae *AcquireError
	if !errors.As(err, &ae) {
		err = &AcquireError{Reason: ReasonStore, Cause: err}
	}
	return WaitResult{Outcome: Failed}, err
}

// dynamoRefusalCodes are DynamoDB's (and AWS's common) error codes of a
// request refused before it was applied, for answers that carry no HTTP
// status (an in-process fake); an answer with one is judged by it (see
// dynamoRefusal).
var dynamoRefusalCodes = map[string]bool{
	"ResourceNotFoundException":           true, // no such table
	"AccessDeniedException":               true, // the role may not
	"ValidationException":                 true,
	"UnrecognizedClientException":         true, // unknown access key
	"MissingAuthenticationTokenException": true,
	"MissingAuthenticationToken":          true,
	"IncompleteSignatureException":        true,
	"InvalidSignatureException":           true,
	"InvalidClientTokenId":                true,
	"SerializationException":              true,
	"ResourceInUseException":              true,
}

// expiredCodes are the error codes of a request that was not applied
// because what signed it has expired since: its session token
// (credentials that rotate, as an assumed role's or a container's do, are
// refreshed by the SDK's credential cache for the next request) or its
// timestamp (the SDK signs every request anew). The next request can be
// served, so these are no refusal.
var expiredCodes = map[string]bool{
	"ExpiredTokenException": true,
	"ExpiredToken":          true,
	"RequestExpired":        true,
}

// isExpiredSigning reports whether err is a store's answer that the
// request was not applied because of how it was signed, and that the
// next request may be served (see dynamoExpiredSigning).
func isExpiredSigning(err error) bool {
	_, ok := dynamoExpiredSigning(err)
	return ok
}

// dynamoExpiredSigning returns the error code of err when DynamoDB did not
// apply the request because of how it was signed, in a way the SDK mends
// for the next request: an expired token or timestamp (see expiredCodes),
// or a 4xx that the SDK marked retryable (a signature refused for a clock
// skew, which the SDK corrects).
func dynamoExpiredSigning(err error) (string, bool) {
	var ae smithy.APIError
	if !errors.As(err, &ae) {
		return "", false
	}
	code := ae.ErrorCode()
	if expiredCodes[code] {
		return code, true
	}
	var marked interface{ RetryableError() bool }
	var st interface{ HTTPStatusCode() int }
	if errors.As(err, &marked) && marked.RetryableError() && !isDynamoThrottle(err) &&
		errors.As(err, &st) && st.HTTPStatusCode() >= 400 && st.HTTPStatusCode() < 500 {
		return code, true
	}
	return "", false
}

// replicatedConflictCode is the error of a write to a table with
// multi-Region strong consistency that raced a write to the same item in
// another Region: not applied, a conflict (as a failed condition is), safe
// to retry.
const replicatedConflictCode = "ReplicatedWriteConflictException"

// isReplicatedConflict reports whether err is a replicatedConflictCode.
func isReplicatedConflict(err error) bool {
	var ae smithy.APIError
	return errors.As(err, &ae) && ae.ErrorCode() == replicatedConflictCode
}

// dynamoRefusal returns the error code of err when it is a refusal: an
// API error that DynamoDB answered with a 4xx status, or, without a status,
// one of dynamoRefusalCodes; never a failed condition, a write conflict
// (a transaction's, another Region's), a throttle, an expired token (see expiredCodes), a code the SDK counts as transient
// (RequestTimeout), or an error the SDK marked retryable (a signature
// refused for a clock skew that the SDK has corrected since).
func dynamoRefusal(err error) (string, bool) {
	var ae smithy.APIError
	if !errors.As(err, &ae) {
		return "", false
	}
	code := ae.ErrorCode()
	_, transient := retry.DefaultRetryableErrorCodes[code]
	_, throttle := retry.DefaultThrottleErrorCodes[code]
	var marked interface{ RetryableError() bool }
	if transient || throttle || expiredCodes[code] || isDynamoThrottle(err) || code == "ConditionalCheckFailedException" ||
		code == "TransactionConflictException" || code == replicatedConflictCode || (errors.As(err, &marked) && marked.RetryableError()) {
		return "", false
	}
	var st interface{ HTTPStatusCode() int }
	if errors.As(err, &st) {
		s := st.HTTPStatusCode()
		return code, s >= 400 && s < 500 && s != 408 && code != ""
	}
	return code, dynamoRefusalCodes[code]
}

// refusal is DynamoStore's error for a refused request (see
// [ErrStoreRefused]), or, when expired is set, for one refused for an
// expired signing (see dynamoExpiredSigning), which is no refusal: it
// names the operation and DynamoDB's error code, and leaves out the
// message, which can name the account, the role and the table. errors.As
// still reaches the SDK's error.
type refusal struct {
	op, code string
	err      error
	expired  bool
}

func (e *refusal) Error() string {
	if e.expired {
		return fmt.Sprintf("lockcore: dynamodb %s: not applied, signed with expired credentials or time: %s", e.op, e.code)
	}
	return fmt.Sprintf("lockcore: dynamodb %s: refused by the store: %s", e.op, e.code)
}

func (e *refusal) Unwrap() error { return e.err }

// Is makes errors.Is(err, ErrStoreRefused) true, unless e.expired.
func (e *refusal) Is(target error) bool { return !e.expired && target == ErrStoreRefused }
