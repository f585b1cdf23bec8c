package xraytracer_test

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/middleware/lockmw"
	"github.com/herdlock/herdlock/middleware/lockmw/xraytracer"
)

// The set-up of a function traced with X-Ray (Tracing: Active): one Setup
// call in main, before the first invocation, then the tracer and the
// instrumented clients.
func ExampleSetup() {
	ctx := context.Background()
	logger := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	tracer, err := xraytracer.Setup(logger) // X-Ray's log to logger, never stdout
	if err != nil {
		logger.Error("tracing", slog.Any("error", err))
		return
	}
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		logger.Error("aws config", slog.Any("error", err))
		return
	}
	xraytracer.InstrumentDynamoDB(&cfg)
	store, err := lockcore.NewDynamoStore(dynamodb.NewFromConfig(cfg), "locks")
	if err != nil {
		logger.Error("store", slog.Any("error", err))
		return
	}
	h := lockmw.Wrap(func(ctx context.Context, pair string) (string, error) { return "rates for " + pair, nil },
		store, func(_ context.Context, pair string) (string, error) { return pair, nil },
		lockmw.WithTelemetry(lockmw.Telemetry{Tracer: tracer}))
	_ = h // lambda.Start(h)
}
