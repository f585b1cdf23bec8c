package oteltracer_test

import (
	"context"
	"errors"
	"testing"

	"github.com/herdlock/herdlock/middleware/lockmw/oteltracer"
	"go.opentelemetry.io/otel/trace"
)

func TestParseTraceHeader(t *testing.T) {
	const (
		traceID = "5759e988bd862e3fe1be46a994272793"
		spanID  = "53995c3f42cd8ad8"
	)
	tests := []struct {
		name    string
		header  string
		sampled bool
	}{
		{"sampled", "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1", true},
		{"not sampled", "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=0", false},
		{"decision deferred", "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=?", false},
		{"no decision", "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8", false},
		{"other order, spaces and fields", " Sampled=1 ; Lineage=a87bd80c:1|68fd508a:5 ;Parent=53995c3f42cd8ad8; Root=1-5759e988-bd862e3fe1be46a994272793", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc, err := oteltracer.ParseTraceHeader(tt.header)
			if err != nil {
				t.Fatalf("ParseTraceHeader(%q) = %v", tt.header, err)
			}
			if sc.TraceID().String() != traceID || sc.SpanID().String() != spanID || sc.IsSampled() != tt.sampled || !sc.IsRemote() {
				t.Errorf("ParseTraceHeader(%q) = trace %s, span %s, sampled %t, remote %t; want %s, %s, %t, true",
					tt.header, sc.TraceID(), sc.SpanID(), sc.IsSampled(), sc.IsRemote(), traceID, spanID, tt.sampled)
			}
		})
	}
}

func TestParseTraceHeaderErrors(t *testing.T) {
	tests := []struct {
		name   string
		header string
	}{
		{"empty", ""},
		{"no root", "Parent=53995c3f42cd8ad8;Sampled=1"},
		{"no parent", "Root=1-5759e988-bd862e3fe1be46a994272793;Sampled=1"},
		{"self only", "Self=1-5759e988-bd862e3fe1be46a994272793;Root=1-5759e988-bd862e3fe1be46a994272793"},
		{"version 2", "Root=2-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8"},
		{"short epoch", "Root=1-5759e98-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8"},
		{"short random", "Root=1-5759e988-bd862e3fe1be46a99427279;Parent=53995c3f42cd8ad8"},
		{"not hex", "Root=1-5759e988-bd862e3fe1be46a99427279z;Parent=53995c3f42cd8ad8"},
		{"zero trace", "Root=1-00000000-000000000000000000000000;Parent=53995c3f42cd8ad8"},
		{"zero parent", "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=0000000000000000"},
		{"long parent", "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad800"},
		{"W3C traceparent", "00-5759e988bd862e3fe1be46a994272793-53995c3f42cd8ad8-01"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc, err := oteltracer.ParseTraceHeader(tt.header)
			if !errors.Is(err, oteltracer.ErrTraceHeader) || sc.IsValid() {
				t.Errorf("ParseTraceHeader(%q) = %v, %v; want an invalid span context and ErrTraceHeader", tt.header, sc, err)
			}
		})
	}
}

func FuzzParseTraceHeader(f *testing.F) {
	f.Add("Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1")
	f.Add("Root=1-;Parent=;Sampled=")
	f.Fuzz(func(t *testing.T, h string) {
		sc, err := oteltracer.ParseTraceHeader(h)
		if (err == nil) != sc.IsValid() {
			t.Errorf("ParseTraceHeader(%q) = valid %t, error %v; want exactly one", h, sc.IsValid(), err)
		}
	})
}

// lambdaHeaderContext puts a trace header where aws-lambda-go does.
func lambdaHeaderContext(ctx context.Context, header string) context.Context {
	//lint:ignore SA1029 the key that aws-lambda-go uses
	return context.WithValue(ctx, "x-amzn-trace-id", header)
}

func TestContextWithLambdaParent(t *testing.T) {
	const (
		fromCtx = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"
		fromEnv = "Root=1-6759e988-cd862e3fe1be46a994272793;Parent=63995c3f42cd8ad8;Sampled=1"
	)
	t.Setenv("_X_AMZN_TRACE_ID", fromEnv)
	want, _ := oteltracer.ParseTraceHeader(fromCtx)
	wantEnv, _ := oteltracer.ParseTraceHeader(fromEnv)
	own := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1}, SpanID: trace.SpanID{2}})
	tests := []struct {
		name string
		ctx  context.Context
		want trace.SpanContext
	}{
		{"header in the context", lambdaHeaderContext(context.Background(), fromCtx), want},
		{"no header in the context: the variable, one invocation per process", context.Background(), wantEnv},
		{"a span in the context wins", trace.ContextWithSpanContext(lambdaHeaderContext(context.Background(), fromCtx), own), own},
		{"a bad header is ignored", lambdaHeaderContext(context.Background(), "Root=bad"), trace.SpanContext{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := trace.SpanContextFromContext(oteltracer.ContextWithLambdaParent(tt.ctx))
			if !got.Equal(tt.want) {
				t.Errorf("ContextWithLambdaParent() span context = %v, want %v", got, tt.want)
			}
		})
	}
}
