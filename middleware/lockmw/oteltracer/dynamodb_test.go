package oteltracer_test

import (
	"strings"
	"testing"
	"time"

	"github.com/herdlock/herdlock/internal/dynalite"
	"github.com/herdlock/herdlock/internal/dynalite/dynalitetest"
	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/middleware/lockmw/oteltracer"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// TestDynamoDBSpans runs one invocation against dynalite through a client
// instrumented with InstrumentDynamoDB: the lock's DynamoDB calls are
// client spans under the middleware's spans, each with one attempt span,
// the table name and no error text.
func TestDynamoDBSpans(t *testing.T) {
	srv := dynalitetest.Start(t)
	if err := lockcore.CreateTable(t.Context(), dynalite.NewClient(srv.Endpoint()), "locks"); err != nil {
		t.Fatalf("CreateTable() = %v", err)
	}
	tr, tp, rec := recording(t)
	store, err := lockcore.NewDynamoStore(dynalite.NewClient(srv.Endpoint(), oteltracer.InstrumentDynamoDB(tp)), "locks")
	if err != nil {
		t.Fatal(err)
	}
	h := wrap(t, store, tr, ok)
	if _, err := h(invocation(t, 30*time.Second, "req-d"), "EUR-USD"); err != nil {
		t.Fatalf("h() = %v", err)
	}

	ended := rec.Ended()
	byID := map[trace.SpanID]sdktrace.ReadOnlySpan{}
	for _, s := range ended {
		byID[s.SpanContext().SpanID()] = s
	}
	parentName := func(s sdktrace.ReadOnlySpan) string {
		if p, ok := byID[s.Parent().SpanID()]; ok {
			return p.Name()
		}
		return ""
	}
	var ops, attempts int
	under := map[string]int{} // operation spans by parent name
	for _, s := range ended {
		a := attrs(s)
		switch {
		case strings.HasPrefix(s.Name(), "DynamoDB."):
			ops++
			under[parentName(s)]++
			if s.SpanKind() != trace.SpanKindClient {
				t.Errorf("span %s kind %v, want client", s.Name(), s.SpanKind())
			}
			op := strings.TrimPrefix(s.Name(), "DynamoDB.")
			if a["rpc.service"].AsString() != "DynamoDB" || a["rpc.method"].AsString() != op || a["rpc.system"].AsString() != "aws-api" {
				t.Errorf("span %s rpc attributes %v, %v, %v", s.Name(), a["rpc.system"].String(), a["rpc.service"].String(), a["rpc.method"].String())
			}
			if got := a[attribute.Key("aws.dynamodb.table_names")].AsStringSlice(); len(got) != 1 || got[0] != "locks" {
				t.Errorf("span %s aws.dynamodb.table_names = %v, want [locks]", s.Name(), got)
			}
			if a["aws.request_id"].AsString() == "" {
				t.Errorf("span %s has no aws.request_id", s.Name())
			}
		case s.Name() == "Attempt":
			attempts++
			if p := parentName(s); !strings.HasPrefix(p, "DynamoDB.") {
				t.Errorf("Attempt span under %q, want a DynamoDB operation span", p)
			}
			if a["http.response.status_code"].AsInt64() == 0 {
				t.Errorf("Attempt span without http.response.status_code: %v", s.Attributes())
			}
		case s.Name() == "herdlock", s.Name() == "lock.acquire", s.Name() == "lock.release":
		default:
			t.Errorf("unexpected span %s under %s: the SDK's inner spans should be folded", s.Name(), parentName(s))
		}
		for _, k := range []attribute.Key{"exception.message", "api.error_message"} {
			if _, has := a[k]; has {
				t.Errorf("span %s records %s", s.Name(), k)
			}
		}
		if want, _ := oteltracer.ParseTraceHeader(traceHeader); s.SpanContext().TraceID() != want.TraceID() {
			t.Errorf("span %s in trace %s, want the Lambda trace %s", s.Name(), s.SpanContext().TraceID(), want.TraceID())
		}
	}
	if ops == 0 || attempts != ops {
		t.Errorf("%d DynamoDB operation spans and %d attempts; want some, one attempt each", ops, attempts)
	}
	if under["herdlock"] == 0 || under["lock.release"] == 0 || len(under) != 2 {
		t.Errorf("DynamoDB spans by parent %v; want the acquisition's under herdlock and the release's under lock.release", under)
	}
}
