package lockcore_test

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/herdlock/herdlock/lockcore"
)

// optsDynamo answers every call with err and keeps the options each call
// would run with, starting from a client with the SDK's default retryer.
type optsDynamo struct {
	err  error
	opts []dynamodb.Options
}

func (f *optsDynamo) record(optFns []func(*dynamodb.Options)) {
	o := dynamodb.Options{Retryer: retry.NewStandard()}
	for _, fn := range optFns {
		fn(&o)
	}
	f.opts = append(f.opts, o)
}

func (f *optsDynamo) UpdateItem(_ context.Context, _ *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	f.record(optFns)
	return nil, f.err
}

func (f *optsDynamo) GetItem(_ context.Context, _ *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	f.record(optFns)
	return nil, f.err
}

// storeOps calls each Store method of s once.
func storeOps(s *lockcore.DynamoStore) map[string]error {
	ctx, key := context.Background(), lockcore.Key{Group: "g", ID: "i"}
	out := map[string]error{}
	_, out["acquire"] = s.Acquire(ctx, fakeAcquireRequest("rev"))
	_, out["renew"] = s.Renew(ctx, lockcore.RenewRequest{Key: key, Revision: "rev"})
	_, out["release"] = s.Release(ctx, lockcore.ReleaseRequest{Key: key, Revision: "rev", Result: lockcore.Success})
	_, _, out["get"] = s.Get(ctx, key)
	return out
}

func TestDynamoStoreMarksThrottles(t *testing.T) {
	tests := []struct {
		name string
		err  error
	}{
		{"ProvisionedThroughputExceededException", &types.ProvisionedThroughputExceededException{}},
		{"ThrottlingException", &types.ThrottlingException{}},
		{"RequestLimitExceeded", &types.RequestLimitExceeded{}},
		{"generic API error with a throttling code", &smithy.GenericAPIError{Code: "ThrottlingException"}},
	}
	for _, tt := range tests {
		f := &optsDynamo{err: tt.err}
		s, err := lockcore.NewDynamoStore(f, "locks")
		if err != nil {
			t.Fatal(err)
		}
		for op, err := range storeOps(s) {
			if !errors.Is(err, lockcore.ErrThrottled) {
				t.Errorf("%s: %s error = %v, want one matching ErrThrottled", tt.name, op, err)
			}
		}
	}
	f := &optsDynamo{err: &smithy.GenericAPIError{Code: "InternalServerError"}}
	s, _ := lockcore.NewDynamoStore(f, "locks")
	for op, err := range storeOps(s) {
		if errors.Is(err, lockcore.ErrThrottled) {
			t.Errorf("%s error %v matches ErrThrottled, want not", op, err)
		}
	}
}

// Each lock call replaces the client's retryer: no retry of throttles, no
// retry quota, one attempt for renew and release.
func TestDynamoStoreCallRetryers(t *testing.T) {
	f := &optsDynamo{err: errors.New("boom")}
	s, err := lockcore.NewDynamoStore(f, "locks")
	if err != nil {
		t.Fatal(err)
	}
	storeOps(s) // acquire, renew, release, get: in that order
	if len(f.opts) != 4 {
		t.Fatalf("calls = %d, want 4", len(f.opts))
	}
	want := []int{2, 1, 1, 2}
	for i, o := range f.opts {
		r := o.Retryer
		if got := r.MaxAttempts(); got != want[i] {
			t.Errorf("call %d: MaxAttempts() = %d, want %d", i, got, want[i])
		}
		if r.IsErrorRetryable(&types.ProvisionedThroughputExceededException{}) || r.IsErrorRetryable(&types.ThrottlingException{}) {
			t.Errorf("call %d: a throttle is retryable, want the lock to pace itself", i)
		}
		// The default quota (500 tokens, 5 per retry) is gone after 100
		// retries; the lock's retryers have none.
		for n := range 200 {
			if _, err := r.GetRetryToken(context.Background(), errors.New("transient")); err != nil {
				t.Errorf("call %d: retry token %d: %v, want no quota", i, n, err)
				break
			}
		}
	}
	transient := &smithy.GenericAPIError{Code: "RequestTimeout"}
	if !f.opts[0].Retryer.IsErrorRetryable(transient) {
		t.Errorf("acquire: RequestTimeout is not retryable, want one retry")
	}
}
