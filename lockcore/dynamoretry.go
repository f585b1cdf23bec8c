package lockcore

import (
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
)

// Retries of [DynamoStore]'s calls. Every call carries its own retryer
// (through the call's option functions), whatever the client's is:
//
//   - no client-side retry quota (ratelimit.None): a throttle storm on a
//     shared client cannot leave the holder's release without retries;
//   - throttling errors are never retried by the SDK: the lock decides what
//     a throttle means (wait, poll later, or retry a renewal or release
//     soon) and paces itself, so no SDK backoff sleeps away a lease;
//   - Acquire and Get retry other transient errors once, after at most
//     [dynamoMaxBackoff]; Renew and Release make one attempt per call,
//     because the lock retries them itself with a timeout per attempt.
const (
	dynamoReadAttempts  = 2
	dynamoWriteAttempts = 1
	dynamoMaxBackoff    = 50 * time.Millisecond
)

// newLockRetryer returns the retryer of one kind of lock call.
func newLockRetryer(attempts int) aws.Retryer {
	return retry.NewStandard(func(o *retry.StandardOptions) {
		o.MaxAttempts = attempts
		o.MaxBackoff = dynamoMaxBackoff
		o.RateLimiter = ratelimit.None
		o.Retryables = append([]retry.IsErrorRetryable{retry.IsErrorRetryableFunc(func(err error) aws.Ternary {
			if isDynamoThrottle(err) {
				return aws.FalseTernary
			}
			return aws.UnknownTernary
		})}, o.Retryables...)
	})
}

// retryers are the per-call retryers of one DynamoStore, built once.
type retryers struct {
	acquire, once aws.Retryer
}

func newRetryers() retryers {
	return retryers{acquire: newLockRetryer(dynamoReadAttempts), once: newLockRetryer(dynamoWriteAttempts)}
}

// optFns returns the call options of operation op.
func (r retryers) optFns(op string) []func(*dynamodb.Options) {
	rt := r.acquire
	if op == "renew" || op == "release" {
		rt = r.once
	}
	return []func(*dynamodb.Options){func(o *dynamodb.Options) { o.Retryer = rt }}
}

// throttleCodes are the error codes by which DynamoDB says it throttled a
// request.
var throttleCodes = map[string]bool{
	"ProvisionedThroughputExceededException": true,
	"ThrottlingException":                    true,
	"RequestLimitExceeded":                   true,
}

// isDynamoThrottle reports whether err is DynamoDB throttling the request.
func isDynamoThrottle(err error) bool {
	var pt *types.ProvisionedThroughputExceededException
	var te *types.ThrottlingException
	var rl *types.RequestLimitExceeded
	if errors.As(err, &pt) || errors.As(err, &te) || errors.As(err, &rl) {
		return true
	}
	var ae smithy.APIError
	return errors.As(err, &ae) && throttleCodes[ae.ErrorCode()]
}

// storeError wraps a DynamoDB error of operation op, marking throttles with
// [ErrThrottled].
func storeError(op string, err error) error {
	if isDynamoThrottle(err) {
		return fmt.Errorf("lockcore: dynamodb %s: %w: %w", op, ErrThrottled, err)
	}
	return fmt.Errorf("lockcore: dynamodb %s: %w", op, err)
}
