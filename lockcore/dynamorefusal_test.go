package lockcore_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/lockcore/storeapi"
)

// withStatus wraps err as the SDK delivers an error answered with HTTP
// status code.
func withStatus(code int, err error) error {
	return &awshttp.ResponseError{ResponseError: &smithyhttp.ResponseError{
		Response: &smithyhttp.Response{Response: &http.Response{StatusCode: code}}, Err: err}}
}

// markedRetryable is an error that the SDK's retryer marked retryable, as
// it marks a signature refused for a clock skew that it has corrected.
type markedRetryable struct{ error }

func (markedRetryable) RetryableError() bool { return true }
func (e markedRetryable) Unwrap() error      { return e.error }

// DynamoStore tells a refused request (a 4xx that says it was not applied)
// from a throttle and from an unknown outcome, on every operation: a
// refusal matches ErrStoreRefused and names the error code, never the
// message; a throttle matches ErrThrottled only; a 5xx or an unknown
// error neither. No 4xx answer's message (which can name the role and the
// account) is in the error's text.
func TestDynamoStoreRefusals(t *testing.T) {
	const secret = "arn:aws:sts::123456789012:assumed-role/secret"
	tests := []struct {
		name        string
		err         error
		wantRefused bool
		wantCode    string
	}{
		{"missing table, no status (a fake)", &types.ResourceNotFoundException{Message: &[]string{"Requested resource not found " + secret}[0]}, true, "ResourceNotFoundException"},
		{"access denied, 400", withStatus(400, &smithy.GenericAPIError{Code: "AccessDeniedException", Message: "User: " + secret + " is not authorized"}), true, "AccessDeniedException"},
		{"validation, 400", withStatus(400, &smithy.GenericAPIError{Code: "ValidationException", Message: "One or more parameter values were invalid " + secret}), true, "ValidationException"},
		{"unrecognized client, 400", withStatus(400, &smithy.GenericAPIError{Code: "UnrecognizedClientException", Message: secret}), true, "UnrecognizedClientException"},
		{"a 4xx code not listed, 400", withStatus(400, &smithy.GenericAPIError{Code: "SomeNewClientException", Message: secret}), true, "SomeNewClientException"},
		{"expired token, 400 (the SDK refreshes the credentials)", withStatus(400, &smithy.GenericAPIError{Code: "ExpiredTokenException", Message: secret}), false, ""},
		{"request expired, 400 (the SDK signs anew)", withStatus(400, &smithy.GenericAPIError{Code: "RequestExpired", Message: secret}), false, ""},
		{"expired token, no status (a fake)", &smithy.GenericAPIError{Code: "ExpiredTokenException"}, false, ""},
		{"clock skew the SDK corrected, 400", markedRetryable{withStatus(400, &smithy.GenericAPIError{Code: "InvalidSignatureException", Message: secret})}, false, ""},
		{"another Region's write conflicts, 400", withStatus(400, &types.ReplicatedWriteConflictException{}), false, ""},
		{"throttled, 400", withStatus(400, &types.ProvisionedThroughputExceededException{}), false, ""},
		{"throttling exception, 400", withStatus(400, &smithy.GenericAPIError{Code: "ThrottlingException"}), false, ""},
		{"request timeout, 400", withStatus(400, &smithy.GenericAPIError{Code: "RequestTimeoutException"}), false, ""},
		{"internal server error, 500", withStatus(500, &types.InternalServerError{}), false, ""},
		{"a 4xx code without status, unknown", &smithy.GenericAPIError{Code: "SomeNewClientException"}, false, ""},
		{"not an API error", errors.New("connection reset"), false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeDynamo{updateErr: tt.err, getErr: tt.err}
			store := newFakeStore(t, f)
			_, aerr := store.Acquire(t.Context(), fakeAcquireRequest("rev"))
			_, rerr := store.Release(t.Context(), storeapi.ReleaseRequest{Key: fakeAcquireRequest("rev").Key, Revision: "rev", Result: lockcore.Success, NowMs: 1})
			_, _, gerr := store.Get(t.Context(), fakeAcquireRequest("rev").Key)
			for op, err := range map[string]error{"Acquire": aerr, "Release": rerr, "Get": gerr} {
				if got := errors.Is(err, lockcore.ErrStoreRefused); got != tt.wantRefused {
					t.Errorf("%s() = %v; matches ErrStoreRefused %t, want %t", op, err, got, tt.wantRefused)
				}
				if strings.Contains(err.Error(), secret) {
					t.Errorf("%s() = %q; carries the server's message", op, err)
				}
				if !tt.wantRefused {
					continue
				}
				if msg := err.Error(); !strings.Contains(msg, tt.wantCode) || strings.Contains(msg, secret) {
					t.Errorf("%s() = %q; want it to name %s and not carry the message", op, msg, tt.wantCode)
				}
			}
		})
	}
}
