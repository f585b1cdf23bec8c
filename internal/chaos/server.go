package chaos

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/herdlock/herdlock/internal/dynalite"
	"github.com/herdlock/herdlock/internal/dynoxide"
)

// This file is the one place that chooses the DynamoDB-API server the
// harness runs on, and how its clients reach it.

// server is the running DynamoDB-API server.
type server interface {
	Endpoint() string
	Close() error
}

// startServer starts the harness's DynamoDB-API server: Dynoxide, the
// emulator closest to DynamoDB (see docs/testing.md).
func startServer(ctx context.Context) (server, error) { return dynoxide.Start(ctx) }

// serverClient returns a client of the server (or of a proxy in front of
// it) at endpoint: internal/dynalite's client, which serves any local
// endpoint.
func serverClient(endpoint string, optFns ...func(*dynamodb.Options)) *dynamodb.Client {
	return dynalite.NewClient(endpoint, optFns...)
}

// lockClient returns the client a lock user has: every request through the
// proxy at endpoint, an attempt timeout, a standard retryer with attempts
// and maxBackoff and no retry quota, and the intent header.
func lockClient(endpoint string, attemptTimeout time.Duration, attempts int, maxBackoff time.Duration) *dynamodb.Client {
	return serverClient(endpoint, func(o *dynamodb.Options) {
		o.HTTPClient = awshttp.NewBuildableClient().WithTimeout(attemptTimeout)
		o.Retryer = retry.NewStandard(func(so *retry.StandardOptions) {
			so.MaxAttempts = attempts
			so.MaxBackoff = maxBackoff
			so.RateLimiter = ratelimit.None
		})
		withIntentHeader(o)
	})
}
