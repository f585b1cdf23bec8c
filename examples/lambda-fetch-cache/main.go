// Command lambda-fetch-cache is a Lambda function (runtime provided.al2023)
// that fetches items from a rate-limited upstream API once per burst of
// concurrent invocations and caches them in DynamoDB, coordinated by
// herdlock's lock. The work is in package fetchcache; main reads the
// configuration, builds the clients and starts the runtime loop.
//
// Build it as Lambda runs it, with the tracing SDK its TRACING mode needs
// (TRACING unset means xray in Lambda; a bootstrap without the mode's tag
// stops at init):
//
//	CGO_ENABLED=0 GOOS=linux GOARCH=arm64 go build -tags lambda.norpc,xray -o bootstrap ./examples/lambda-fetch-cache
//
// make build-FetchFunction (what sam build runs) does this; LAMBDA_TAGS
// picks the tags (xray, otel, both, or none with TRACING=off).
//
// One function serves every front door; it tells them apart by the event's
// shape (fetchcache.Classify): a direct invocation ({"pair": "EUR-USD"}),
// the HTTP API routes GET /rates/{pair} and POST /orders (an order created
// upstream once per Idempotency-Key), the function URL (?pair= or a
// {"pair": ...} body), and SQS batches of {"pair": ...} refreshes with
// ReportBatchItemFailures, each message id processed once (in the cache
// answer mode only).
//
// A missing or invalid setting stops it at init with a message on stderr and
// exit status 1, before it takes any invocation.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/herdlock/herdlock/emf"
	"github.com/herdlock/herdlock/examples/lambda-fetch-cache/fetchcache"
	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/middleware/lockmw"
)

func main() {
	h, err := setup(context.Background(), os.Getenv)
	if err != nil {
		fmt.Fprintf(os.Stderr, "lambda-fetch-cache: init: %v\n", err)
		os.Exit(1)
	}
	lambda.Start(h)
}

// upstreamTimeout bounds one upstream call, so that a hung upstream is an
// upstream_timeout failure the herd learns of, not a holder that runs into
// its maximum hold.
const upstreamTimeout = 10 * time.Second

// setup builds the handler from the environment read through getenv.
func setup(ctx context.Context, getenv func(string) string) (handler, error) {
	cfg, err := fetchcache.LoadConfig(getenv)
	if err != nil {
		return nil, err
	}
	logger := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: cfg.LogLevel}))
	// The lock sets its own retries per call; the handler's calls on the
	// same client get no retry quota and a short backoff, as package
	// lockcore recommends.
	awsCfg, err := awsconfig.LoadDefaultConfig(ctx, awsconfig.WithRetryer(func() aws.Retryer {
		return retry.NewStandard(func(o *retry.StandardOptions) {
			o.RateLimiter = ratelimit.None
			o.MaxBackoff = time.Second
		})
	}))
	if err != nil {
		return nil, fmt.Errorf("aws config: %w", err)
	}
	tr, err := setupTracing(ctx, cfg, logger, &awsCfg)
	if err != nil {
		return nil, fmt.Errorf("tracing: %w", err)
	}
	client := dynamodb.NewFromConfig(awsCfg, func(o *dynamodb.Options) {
		if cfg.DynamoDBEndpoint != "" {
			o.BaseEndpoint = aws.String(cfg.DynamoDBEndpoint)
		}
		if tr.dynamo != nil {
			tr.dynamo(o)
		}
	})
	store, err := lockcore.NewDynamoStore(client, cfg.LockTable)
	if err != nil {
		return nil, err
	}
	metrics, err := emf.New(emf.WithNamespace(cfg.MetricsNamespace), emf.WithService(cfg.ServiceName))
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	up := fetchcache.NewUpstream(cfg.UpstreamURL, &http.Client{Timeout: upstreamTimeout})
	opts := []lockmw.Option{
		lockmw.WithTelemetry(lockmw.Telemetry{EMF: metrics, ColdStartMetric: true, Logger: logger, Tracer: tr.tracer}),
	}
	var (
		h     func(context.Context, fetchcache.Request) (fetchcache.Response, error)
		cache *fetchcache.Cache
	)
	if cfg.AnswerMode == fetchcache.AnswerInline {
		h, err = fetchcache.NewInlineHandler(store, cfg.LockGroup, cfg.CacheTTL, up, opts...)
	} else {
		cache = fetchcache.NewCache(client, cfg.CacheTable, cfg.CacheTTL)
		h, err = fetchcache.NewHandler(store, cfg.LockGroup, cache, up, opts...)
	}
	if err != nil {
		return nil, err
	}
	fronts, err := fetchcache.NewFronts(h, store, cfg.LockGroup, cfg.CacheTTL, cache, up, opts...)
	if err != nil {
		return nil, err
	}
	return tr.wrap(fronts.Handle), nil
}
