package lockmw

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/aws/aws-lambda-go/lambdacontext"
)

const envFunctionName = "AWS_LAMBDA_FUNCTION_NAME"

// hostPID names this process outside Lambda: "hostname:pid".
var hostPID = sync.OnceValue(func() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		h = "localhost"
	}
	return h + ":" + strconv.Itoa(os.Getpid())
})

// defaultOwner names the invocation: the log stream and the request id
// from the Lambda context, else hostname:pid.
func defaultOwner(ctx context.Context) string {
	lc, ok := lambdacontext.FromContext(ctx)
	if !ok || lc.AwsRequestID == "" {
		return hostPID()
	}
	stream := lambdacontext.LogStreamName
	if stream == "" {
		stream = hostPID()
	}
	return stream + "/" + lc.AwsRequestID
}

// requestID returns the request id from the Lambda context, or "".
func requestID(ctx context.Context) string {
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		return lc.AwsRequestID
	}
	return ""
}

// accountFromARN returns the account id of a Lambda function ARN,
// "arn:aws:lambda:us-east-1:123456789012:function:name[:qualifier]".
func accountFromARN(arn string) (int64, error) {
	rest, ok := strings.CutPrefix(arn, "arn:")
	if !ok {
		return 0, fmt.Errorf("not an ARN: %q", arn)
	}
	for range 3 { // partition, service, region
		_, rest, ok = strings.Cut(rest, ":")
		if !ok {
			return 0, fmt.Errorf("not a function ARN: %q", arn)
		}
	}
	acct, _, _ := strings.Cut(rest, ":")
	id, err := strconv.ParseInt(acct, 10, 64)
	if err != nil || id <= 0 {
		return 0, fmt.Errorf("no account id in ARN %q", arn)
	}
	return id, nil
}
