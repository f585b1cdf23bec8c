// The quick-start consumer with OpenTelemetry through oteltracer, the SDK
// and the OTLP/HTTP exporter, as a user sending spans to a collector would.
package main

import (
	"context"
	"log"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/middleware/lockmw"
	"github.com/herdlock/herdlock/middleware/lockmw/oteltracer"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

type Event struct{ Pair string }

type Rate struct{ Value float64 }

func fetchRate(ctx context.Context, e Event) (Rate, error) { return Rate{Value: 1}, nil }

func main() {
	ctx := context.Background()
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		log.Fatal(err)
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		log.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp))
	tracer, err := oteltracer.New(tp)
	if err != nil {
		log.Fatal(err)
	}
	store, err := lockcore.NewDynamoStore(dynamodb.NewFromConfig(cfg, oteltracer.InstrumentDynamoDB(tp)), os.Getenv("LOCK_TABLE"))
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
