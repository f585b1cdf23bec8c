// The quick-start consumer with X-Ray tracing through xraytracer.
package main

import (
	"context"
	"log"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/middleware/lockmw"
	"github.com/herdlock/herdlock/middleware/lockmw/xraytracer"
)

type Event struct{ Pair string }

type Rate struct{ Value float64 }

func fetchRate(ctx context.Context, e Event) (Rate, error) { return Rate{Value: 1}, nil }

func main() {
	cfg, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	tracer, err := xraytracer.Setup(slog.Default())
	if err != nil {
		log.Fatal(err)
	}
	xraytracer.InstrumentDynamoDB(&cfg)
	store, err := lockcore.NewDynamoStore(dynamodb.NewFromConfig(cfg), os.Getenv("LOCK_TABLE"))
	if err != nil {
		log.Fatal(err)
	}
	h, err := lockmw.New(fetchRate, store, func(ctx context.Context, e Event) (string, error) { return e.Pair, nil },
		lockmw.WithTelemetry(lockmw.Telemetry{Tracer: tracer}))
	if err != nil {
		log.Fatal(err)
	}
	lambda.Start(h)
}
