package lockcore_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/lockcore/storeapi"
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
	_, out["renew"] = s.Renew(ctx, storeapi.RenewRequest{Key: key, Revision: "rev"})
	_, out["release"] = s.Release(ctx, storeapi.ReleaseRequest{Key: key, Revision: "rev", Result: lockcore.Success})
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
// retry quota, one SDK attempt for the writes (Acquire retries by itself,
// see TestDynamoStoreAcquireRetry).
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
	want := []int{1, 1, 1, 2}
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
	if !f.opts[3].Retryer.IsErrorRetryable(transient) {
		t.Errorf("get: RequestTimeout is not retryable, want one retry")
	}
}

// http500 is a DynamoDB InternalServerError as the SDK reports it: a 5xx,
// after which the write may have been applied.
func http500() error {
	return &awshttp.ResponseError{ResponseError: &smithyhttp.ResponseError{
		Response: &smithyhttp.Response{Response: &http.Response{StatusCode: 500}},
		Err:      &types.InternalServerError{Message: aws.String("injected")},
	}}
}

// Acquire retries a transient failure once by itself. When that retry is
// throttled, the first attempt's outcome is still unknown (a 5xx may have
// been applied): the error does not match ErrThrottled, so the lock settles
// it rather than waiting on what may be its own write.
func TestDynamoStoreAcquireRetry(t *testing.T) {
	throttle := &types.ProvisionedThroughputExceededException{Message: aws.String("injected")}
	tests := []struct {
		name      string
		seq       []fakeReply
		calls     int
		throttled bool
	}{
		{"5xx then throttle", []fakeReply{{err: http500()}, {err: throttle}}, 2, false},
		{"5xx then 5xx", []fakeReply{{err: http500()}, {err: http500()}}, 2, false},
		{"throttle first", []fakeReply{{err: throttle}}, 1, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeDynamo{updateSeq: tt.seq, updateErr: errors.New("no more replies")}
			s := newFakeStore(t, f)
			_, err := s.Acquire(context.Background(), fakeAcquireRequest("rev"))
			if err == nil {
				t.Fatal("Acquire() = nil error, want one")
			}
			if got := errors.Is(err, lockcore.ErrThrottled); got != tt.throttled {
				t.Errorf("Acquire() = %v: matches ErrThrottled %t, want %t", err, got, tt.throttled)
			}
			if len(f.updates) != tt.calls {
				t.Errorf("UpdateItem calls = %d, want %d", len(f.updates), tt.calls)
			}
		})
	}
	// A retry whose condition fails on our own revision: the first attempt
	// was applied, and Acquire returns our item.
	f := &fakeDynamo{updateSeq: []fakeReply{{err: http500()}, {err: &types.ConditionalCheckFailedException{Item: ownItem("rev")}}}}
	it, err := newFakeStore(t, f).Acquire(context.Background(), fakeAcquireRequest("rev"))
	if err != nil || it.Revision != "rev" {
		t.Errorf("Acquire(5xx, then own revision) = %q, %v, want our item", it.Revision, err)
	}
}

// ownItem is a held item at revision rev, as ALL_OLD returns it.
func ownItem(rev string) map[string]types.AttributeValue {
	av := storedItem(rev)
	av[storeapi.AttrIsReleased] = avBool(false)
	return av
}
