package oteltracer

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/aws/aws-lambda-go/lambdacontext"
	"go.opentelemetry.io/otel/trace"
)

// lambdaTraceHeaderKey is the context key under which aws-lambda-go puts
// the invocation's trace header; it is a plain string, by aws-lambda-go's
// choice.
const lambdaTraceHeaderKey = "x-amzn-trace-id"

// envTraceHeader is where aws-lambda-go also puts the header when the
// process runs one invocation at a time.
const envTraceHeader = "_X_AMZN_TRACE_ID"

// ContextWithLambdaParent returns ctx with the invocation's Lambda trace
// header as the remote parent span, so that spans started from it join
// the trace Lambda records. The header is read from ctx, where
// aws-lambda-go puts it, or else, when the process runs one invocation at
// a time (AWS_LAMBDA_MAX_CONCURRENCY unset or 1), from _X_AMZN_TRACE_ID:
// with several invocations per process aws-lambda-go no longer sets the
// variable, and another invocation's value must not be read. It returns
// ctx unchanged when ctx already carries a valid span context, or when
// there is no header or it does not parse.
func ContextWithLambdaParent(ctx context.Context) context.Context {
	if trace.SpanContextFromContext(ctx).IsValid() {
		return ctx
	}
	h, _ := ctx.Value(lambdaTraceHeaderKey).(string)
	if h == "" && lambdacontext.MaxConcurrency() <= 1 {
		h = os.Getenv(envTraceHeader)
	}
	if h == "" {
		return ctx
	}
	sc, err := ParseTraceHeader(h)
	if err != nil {
		return ctx
	}
	return trace.ContextWithRemoteSpanContext(ctx, sc)
}

// ErrTraceHeader is wrapped in the errors of [ParseTraceHeader].
var ErrTraceHeader = errors.New("oteltracer: invalid X-Ray trace header")

// ParseTraceHeader parses an AWS X-Ray trace header,
// "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1",
// into a remote span context: the trace id is the root's two hex parts
// joined (the epoch seconds and 96 random bits), the span id the parent,
// and the span is sampled only with Sampled=1 (a missing or "?" decision
// is not sampled). Other fields (Lineage, Self) are ignored; Root and
// Parent are required. Errors wrap [ErrTraceHeader].
func ParseTraceHeader(h string) (trace.SpanContext, error) {
	var root, parent, sampled string
	for field := range strings.SplitSeq(h, ";") {
		k, v, _ := strings.Cut(strings.TrimSpace(field), "=")
		switch k {
		case "Root":
			root = v
		case "Parent":
			parent = v
		case "Sampled":
			sampled = v
		}
	}
	var cfg trace.SpanContextConfig
	if err := parseRoot(root, &cfg.TraceID); err != nil {
		return trace.SpanContext{}, err
	}
	if len(parent) != 2*len(cfg.SpanID) {
		return trace.SpanContext{}, fmt.Errorf("%w: Parent %q is not 16 hex digits", ErrTraceHeader, parent)
	}
	if _, err := hex.Decode(cfg.SpanID[:], []byte(parent)); err != nil || !cfg.SpanID.IsValid() {
		return trace.SpanContext{}, fmt.Errorf("%w: Parent %q is not 16 hex digits, not all zero", ErrTraceHeader, parent)
	}
	if sampled == "1" {
		cfg.TraceFlags = trace.FlagsSampled
	}
	cfg.Remote = true
	return trace.NewSpanContext(cfg), nil
}

// parseRoot parses "1-{8 hex}-{24 hex}" into id.
func parseRoot(root string, id *trace.TraceID) error {
	version, rest, ok1 := strings.Cut(root, "-")
	epoch, random, ok2 := strings.Cut(rest, "-")
	if !ok1 || !ok2 || version != "1" || len(epoch) != 8 || len(random) != 24 {
		return fmt.Errorf("%w: Root %q is not 1-{8 hex digits}-{24 hex digits}", ErrTraceHeader, root)
	}
	if _, err := hex.Decode(id[:4], []byte(epoch)); err != nil {
		return fmt.Errorf("%w: Root %q: %w", ErrTraceHeader, root, err)
	}
	if _, err := hex.Decode(id[4:], []byte(random)); err != nil {
		return fmt.Errorf("%w: Root %q: %w", ErrTraceHeader, root, err)
	}
	if !id.IsValid() {
		return fmt.Errorf("%w: Root %q is all zero", ErrTraceHeader, root)
	}
	return nil
}
