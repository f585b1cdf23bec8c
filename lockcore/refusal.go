package lockcore

import (
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/smithy-go"
)

// A refusal is a store error that proves the request was not applied and
// that the same request would be refused again at once (see
// [ErrStoreRefused]): an acquire refused so is not settled, a wait that
// meets one ends, a release stops retrying. Only an unknown outcome (a
// 5xx, a lost answer, a timeout) is settled and retried.

// isRefusal reports whether err is a refusal: one matching
// [ErrStoreRefused], or [ErrItemTooLarge] (DynamoDB's ValidationException
// for an item over its size limit).
func isRefusal(err error) bool {
	return errors.Is(err, ErrStoreRefused) || errors.Is(err, ErrItemTooLarge)
}

// refused ends TryAcquireElseWaitForRelease's first step with a refusal.
func (l *Lock) refused(err error) (WaitResult, error) {
	l.count(MetricLockAcquisitionSuccess, 0)
	l.count(MetricLockAcquisitionError, 1)
	l.count(MetricLockAcquisitionFailed, 1)
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
	"ExpiredTokenException":               true,
	"RequestExpired":                      true,
	"SerializationException":              true,
	"ResourceInUseException":              true,
}

// dynamoRefusal returns the error code of err when it is a refusal: an
// API error that DynamoDB answered with a 4xx status, or, without a status,
// one of dynamoRefusalCodes; never a failed condition, a throttle, or a
// code the SDK counts as transient (RequestTimeout).
func dynamoRefusal(err error) (string, bool) {
	var ae smithy.APIError
	if !errors.As(err, &ae) {
		return "", false
	}
	code := ae.ErrorCode()
	_, transient := retry.DefaultRetryableErrorCodes[code]
	_, throttle := retry.DefaultThrottleErrorCodes[code]
	if transient || throttle || isDynamoThrottle(err) || code == "ConditionalCheckFailedException" ||
		code == "TransactionConflictException" {
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
// [ErrStoreRefused]): it names the operation and DynamoDB's error code,
// and leaves out the message, which can name the account, the role and
// the table. errors.As still reaches the SDK's error.
type refusal struct {
	op, code string
	err      error
}

func (e *refusal) Error() string {
	return fmt.Sprintf("lockcore: dynamodb %s: refused by the store: %s", e.op, e.code)
}

func (e *refusal) Unwrap() error { return e.err }

// Is makes errors.Is(err, ErrStoreRefused) true.
func (e *refusal) Is(target error) bool { return target == ErrStoreRefused }
