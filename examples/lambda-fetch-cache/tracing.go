package main

import (
	"context"
	"encoding/json"
	"log/slog"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/herdlock/herdlock/examples/lambda-fetch-cache/fetchcache"
	"github.com/herdlock/herdlock/middleware/lockmw"
)

// handler is the function's handler type: every front door, dispatched by
// the event's shape (fetchcache.Fronts.Handle).
type handler = func(context.Context, json.RawMessage) (any, error)

// tracing is what the configured tracing mode adds to the function.
type tracing struct {
	tracer lockmw.Tracer           // nil: off
	dynamo func(*dynamodb.Options) // the DynamoDB client's instrumentation, or nil
	wrap   func(handler) handler   // per invocation: join Lambda's trace, flush
}

// setupTracing prepares the mode cfg.Tracing: X-Ray subsegments through
// the X-Ray SDK (which instruments the clients of awsCfg), OpenTelemetry
// spans exported over OTLP/HTTP, or nothing.
//
// Each tracing SDK is compiled in only by its build tag (xray, otel), so a
// bootstrap built without them neither links nor builds them; a mode whose
// tag is missing is a configuration error at init, not a silent "off".
func setupTracing(ctx context.Context, cfg fetchcache.Config, logger *slog.Logger, awsCfg *aws.Config) (tracing, error) {
	switch cfg.Tracing {
	case fetchcache.TracingXRay:
		return setupXRay(logger, awsCfg)
	case fetchcache.TracingOTel:
		return setupOTel(ctx, cfg, logger)
	}
	return tracing{wrap: untraced}, nil
}

// untraced is the per-invocation wrapper of a mode that needs none.
func untraced(h handler) handler { return h }
