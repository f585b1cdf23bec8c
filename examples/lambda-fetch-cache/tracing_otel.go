//go:build otel

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/herdlock/herdlock/examples/lambda-fetch-cache/fetchcache"
	"github.com/herdlock/herdlock/middleware/lockmw"
	"github.com/herdlock/herdlock/middleware/lockmw/oteltracer"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// setupOTel exports spans over OTLP/HTTP and instruments the DynamoDB
// client through its native tracer provider; built with the otel tag.
func setupOTel(ctx context.Context, cfg fetchcache.Config, logger *slog.Logger) (tracing, error) {
	tp, err := newTracerProvider(ctx, cfg)
	if err != nil {
		return tracing{}, err
	}
	tr, err := oteltracer.New(tp)
	if err != nil {
		return tracing{}, err
	}
	return tracing{
		tracer: tr,
		dynamo: oteltracer.InstrumentDynamoDB(tp),
		wrap:   func(h handler) handler { return flushing(h, tp, logger) },
	}, nil
}

// defaultOTLPEndpoint is where a collector running as a Lambda extension
// (layer) listens for OTLP over HTTP.
const defaultOTLPEndpoint = "http://localhost:4318/v1/traces"

// newTracerProvider exports spans in batches over OTLP/HTTP. The exporter
// and the SDK read the standard OTEL_ variables (endpoint, headers,
// timeout, sampler, batch sizes); without an endpoint it sends to a
// collector on localhost, as the collector layer runs it. The resource is
// the function (OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win).
func newTracerProvider(ctx context.Context, cfg fetchcache.Config) (*sdktrace.TracerProvider, error) {
	var opts []otlptracehttp.Option
	if os.Getenv(fetchcache.EnvOTLPEndpoint) == "" && os.Getenv(fetchcache.EnvOTLPTracesEndpoint) == "" {
		opts = append(opts, otlptracehttp.WithEndpointURL(defaultOTLPEndpoint))
	}
	exp, err := otlptracehttp.New(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("otlp exporter: %w", err)
	}
	attrs := []attribute.KeyValue{
		attribute.String("service.name", cfg.ServiceName),
		attribute.String("cloud.provider", "aws"),
		attribute.String("cloud.platform", "aws_lambda"),
	}
	for k, env := range map[string]string{"cloud.region": "AWS_REGION", "faas.name": "AWS_LAMBDA_FUNCTION_NAME", "faas.version": "AWS_LAMBDA_FUNCTION_VERSION"} {
		if v := os.Getenv(env); v != "" {
			attrs = append(attrs, attribute.String(k, v))
		}
	}
	res, err := resource.New(ctx, resource.WithAttributes(attrs...), resource.WithFromEnv(), resource.WithTelemetrySDK())
	if err != nil {
		return nil, fmt.Errorf("otel resource: %w", err)
	}
	return sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res)), nil
}

// maxFlush bounds the flush at the end of an invocation.
const maxFlush = 2 * time.Second

// flushing returns h inside a server span for the invocation, as the
// semantic conventions for FaaS have it, parented on the invocation's
// Lambda trace header (a new trace without one), and with its spans
// exported before it returns: on Lambda's default capacity the sandbox may
// be frozen once the handler has answered, so a batch left in memory could
// wait minutes, or be lost with the sandbox.
func flushing(h handler, tp *sdktrace.TracerProvider, logger *slog.Logger) handler {
	tracer := tp.Tracer("github.com/herdlock/herdlock/examples/lambda-fetch-cache")
	name := os.Getenv("AWS_LAMBDA_FUNCTION_NAME")
	if name == "" {
		name = "lambda-fetch-cache"
	}
	return func(ctx context.Context, req json.RawMessage) (any, error) {
		var attrs []attribute.KeyValue
		if lc, ok := lambdacontext.FromContext(ctx); ok {
			attrs = append(attrs, attribute.String("faas.invocation_id", lc.AwsRequestID),
				attribute.String("cloud.resource_id", lc.InvokedFunctionArn))
		}
		ctx, span := tracer.Start(oteltracer.ContextWithLambdaParent(ctx), name,
			trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
		resp, err := h(ctx, req)
		if err != nil {
			code := lockmw.ErrorReason(err)
			span.SetAttributes(attribute.String("error.type", code))
			span.SetStatus(codes.Error, code)
		}
		span.End()
		budget := maxFlush
		if dl, ok := ctx.Deadline(); ok {
			budget = min(budget, max(time.Until(dl)-100*time.Millisecond, 50*time.Millisecond))
		}
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), budget)
		defer cancel()
		if ferr := tp.ForceFlush(fctx); ferr != nil {
			// The exporter's error may quote the collector's answer: log
			// only its code.
			logger.WarnContext(ctx, "lambda-fetch-cache: span flush", slog.String("error", lockmw.ErrorReason(ferr)))
		}
		return resp, err
	}
}
