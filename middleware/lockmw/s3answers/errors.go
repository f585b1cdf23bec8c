package s3answers

import (
	"context"
	"errors"
	"fmt"
	"net"
	"syscall"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
)

// ErrNotFound means the bucket holds no object under the answer's ref:
// it was never written, or a lifecycle rule or someone else removed it.
var ErrNotFound = errors.New("s3answers: no object under the answer's ref")

// errBadRef: a ref that is not a safe object key (lockmw's never are).
var errBadRef = errors.New("s3answers: the ref is not a safe object key")

// storeError is a failed S3 call, told without the bucket, the key, the
// endpoint or S3's message (which can name the bucket, the account and
// the role). The SDK's error stays reachable with errors.As.
type storeError struct {
	msg string
	err error
}

func (e *storeError) Error() string { return e.msg }
func (e *storeError) Unwrap() error { return e.err }

// describe returns err, a failed S3 call op made within ctx, told as a
// storeError: the context's end when that is what stopped it,
// [ErrNotFound] for a missing object, S3's error code and HTTP status
// when S3 answered, and the kind of network failure when it did not.
func describe(ctx context.Context, op string, err error) error {
	var (
		noKey  *types.NoSuchKey
		api    smithy.APIError
		resp   *awshttp.ResponseError
		netErr net.Error
	)
	status := 0
	if errors.As(err, &resp) {
		status = resp.HTTPStatusCode()
	}
	switch {
	case ctx.Err() != nil:
		return &storeError{msg: fmt.Sprintf("s3answers: %s: %v", op, context.Cause(ctx)), err: errors.Join(context.Cause(ctx), err)}
	case errors.As(err, &noKey) || status == 404 && op == "get":
		return &storeError{msg: fmt.Sprintf("s3answers: %s: %v", op, ErrNotFound), err: errors.Join(ErrNotFound, err)}
	case errors.As(err, &api):
		return &storeError{msg: fmt.Sprintf("s3answers: %s: S3 answered %s (HTTP %d)", op, api.ErrorCode(), status), err: err}
	case errors.Is(err, syscall.ECONNREFUSED):
		return &storeError{msg: fmt.Sprintf("s3answers: %s: the S3 endpoint refused the connection", op), err: err}
	case errors.As(err, &netErr) && netErr.Timeout():
		return &storeError{msg: fmt.Sprintf("s3answers: %s: the S3 endpoint timed out", op), err: err}
	case status != 0:
		return &storeError{msg: fmt.Sprintf("s3answers: %s: S3 answered HTTP %d", op, status), err: err}
	}
	return &storeError{msg: fmt.Sprintf("s3answers: %s: the request failed before S3 answered", op), err: err}
}
