package dynalite

import (
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// NewClient returns a DynamoDB client for a local DynamoDB-API server at
// endpoint (Dynoxide, dynalite, minidyn in httptest): static dummy
// credentials, region us-east-1, and an explicit standard retryer with 3
// attempts, at most 50 ms of backoff and no client-side retry quota, so
// tests fail fast and concurrent tests do not starve each other of retries.
// optFns adjust the options afterwards; for a server that sends a wrong or
// odd X-Amz-Crc32 header, set DisableValidateResponseChecksum (the SDK
// checks the header only when it is present).
func NewClient(endpoint string, optFns ...func(*dynamodb.Options)) *dynamodb.Client {
	opts := dynamodb.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(endpoint),
		Credentials:  credentials.NewStaticCredentialsProvider("herdlock", "herdlock", ""),
		Retryer: retry.NewStandard(func(o *retry.StandardOptions) {
			o.MaxAttempts = 3
			o.MaxBackoff = 50 * time.Millisecond
			o.RateLimiter = ratelimit.None
		}),
	}
	for _, fn := range optFns {
		fn(&opts)
	}
	return dynamodb.New(opts)
}
