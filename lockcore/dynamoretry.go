package lockcore

import (
	"context"
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
//   - Get retries other transient errors once, after at most
//     [dynamoMaxBackoff]; Acquire does too, but retries by itself (see
//     acquireItem), so that a throttled retry of a write whose first
//     answer was lost is not taken for a write never applied; Renew and
//     Release make one attempt per call, because the lock retries them
//     itself with a timeout per attempt.
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

// retryers are the per-call retryers of one DynamoStore, built once: read
// for Get, once for the writes.
type retryers struct {
	read, once aws.Retryer
}

func newRetryers() retryers {
	return retryers{read: newLockRetryer(dynamoReadAttempts), once: newLockRetryer(dynamoWriteAttempts)}
}

// optFns returns the call options of operation op.
func (r retryers) optFns(op string) []func(*dynamodb.Options) {
	rt := r.once
	if op == "get" {
		rt = r.read
	}
	return []func(*dynamodb.Options){func(o *dynamodb.Options) { o.Retryer = rt }}
}

// acquireItem sends Acquire's UpdateItem, and once more, after at most
// [dynamoMaxBackoff], when the first attempt failed with a transient
// error: an error whose write may have been applied (a 5xx, a lost
// response). When the retry is then throttled, the outcome is still
// unknown: the error returned is an [unknownOutcome], which does not match
// [ErrThrottled], so that the lock settles it (a consistent read that
// recognises our revision) instead of waiting on its own write.
func (s *DynamoStore) acquireItem(ctx context.Context, in *dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error) {
	out, err := s.api.UpdateItem(ctx, in, s.retry.optFns("acquire")...)
	if err == nil || ctx.Err() != nil || !s.retry.read.IsErrorRetryable(err) {
		return out, err
	}
	delay, derr := s.retry.read.RetryDelay(1, err)
	if derr != nil {
		delay = dynamoMaxBackoff
	}
	if sleepCtx(ctx, delay) != nil {
		return nil, err
	}
	out, rerr := s.api.UpdateItem(ctx, in, s.retry.optFns("acquire")...)
	if rerr != nil && isDynamoThrottle(rerr) {
		return nil, &unknownOutcome{first: err, retry: rerr}
	}
	return out, rerr
}

// unknownOutcome is the error of an acquire whose first attempt may have
// been applied (it failed with first) and whose retry was throttled. It
// unwraps to first only: a throttle after an unknown outcome is still an
// unknown outcome.
type unknownOutcome struct {
	first, retry error
}

func (e *unknownOutcome) Error() string {
	return fmt.Sprintf("outcome unknown: %v; the retry was throttled", e.first)
}

func (e *unknownOutcome) Unwrap() error { return e.first }

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
// [ErrThrottled] and refusals with [ErrStoreRefused] (see dynamoRefusal).
func storeError(op string, err error) error {
	if code, ok := dynamoRefusal(err); ok {
		return &refusal{op: op, code: code, err: err}
	}
	if isDynamoThrottle(err) {
		return fmt.Errorf("lockcore: dynamodb %s: %w: %w", op, ErrThrottled, err)
	}
	return fmt.Errorf("lockcore: dynamodb %s: %w", op, err)
}
