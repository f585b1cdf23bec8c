//go:build otel

package main

import (
	"compress/gzip"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/herdlock/herdlock/examples/lambda-fetch-cache/fetchcache"
	"github.com/herdlock/herdlock/examples/lambda-fetch-cache/internal/localrun"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// otelSandboxes is the burst size of the OpenTelemetry end-to-end test.
const otelSandboxes = 4

// TestEndToEndOpenTelemetry runs a burst of the real bootstrap under the
// emulator with TRACING=otel, exporting to an OTLP/HTTP receiver started
// by the test. Every invocation's spans arrive before its answer does (the
// function flushes before returning), as one trace under the invocation's
// server span, with the lock's spans, the DynamoDB calls and the function's
// resource; and stdout still holds only EMF documents. (The emulator passes
// no X-Ray trace header to the function, so the parenting on Lambda's
// trace is tested in package oteltracer.)
func TestEndToEndOpenTelemetry(t *testing.T) {
	stack := newEmulatorStack(t, "otel")
	recv := startOTLPReceiver(t)
	r := stack.start(t, localrun.Options{
		N: otelSandboxes,
		Env: []string{
			fetchcache.EnvTracing + "=otel",
			fetchcache.EnvOTLPEndpoint + "=" + recv.srv.URL,
			fetchcache.EnvOTelServiceName + "=fetch-cache-e2e",
		},
	})

	resps := decodeAll(t, r.Pool.Burst(burstContext(t), localrun.Payloads(localrun.Repeat("EUR-USD", otelSandboxes)...)))
	// No waiting: each invocation flushed its spans before it answered.
	spans, bad := recv.received()
	for _, b := range bad {
		t.Errorf("OTLP receiver: %s", b)
	}
	byTrace := map[string][]receivedSpan{}
	for _, s := range spans {
		id := hex.EncodeToString(s.span.TraceId)
		byTrace[id] = append(byTrace[id], s)
		if res := s.resource; res["service.name"] != "fetch-cache-e2e" || res["faas.name"] != "lambda-fetch-cache" ||
			res["cloud.provider"] != "aws" || res["cloud.platform"] != "aws_lambda" {
			t.Errorf("span %s resource %v; want OTEL_SERVICE_NAME's service and the function", s.span.Name, res)
		}
	}
	if len(byTrace) != otelSandboxes {
		t.Fatalf("%d traces, want one per invocation (%d); spans %v", len(byTrace), otelSandboxes, spanNames(spans))
	}

	var gotOutcomes, wantOutcomes []string
	for _, resp := range resps {
		wantOutcomes = append(wantOutcomes, resp.Outcome)
	}
	invocationIDs := map[string]bool{}
	var fetched int
	for id, trace := range byTrace {
		server := checkTree(t, id, trace)
		if server == nil {
			continue
		}
		invocationIDs[stringAttrs(server)["faas.invocation_id"]] = true
		root := find(trace, "herdlock")
		if len(root) == 0 {
			gotOutcomes = append(gotOutcomes, fetchcache.OutcomeNone) // a fresh cache entry: no lock
			continue
		}
		if len(root) != 1 || !isChild(root[0], server) {
			t.Errorf("trace %s: %d herdlock spans, want one under the server span", id, len(root))
			continue
		}
		a := stringAttrs(root[0])
		gotOutcomes = append(gotOutcomes, a["herdlock.lock.outcome"])
		if a["herdlock.lock.id"] != "EUR-USD" || a["faas.invocation_id"] == "" {
			t.Errorf("trace %s: herdlock attributes %v; want lock id EUR-USD and an invocation id", id, a)
		}
		if a["herdlock.lock.outcome"] != "ACQUIRED" {
			continue
		}
		fetched++
		checkHolderTrace(t, id, trace, server, root[0], r.LockTable, r.CacheTable)
	}
	slices.Sort(gotOutcomes)
	slices.Sort(wantOutcomes)
	if !slices.Equal(gotOutcomes, wantOutcomes) {
		t.Errorf("outcomes in the traces %v, in the answers %v", gotOutcomes, wantOutcomes)
	}
	if len(invocationIDs) != otelSandboxes || invocationIDs[""] {
		t.Errorf("server spans' invocation ids %v, want %d distinct ones", invocationIDs, otelSandboxes)
	}
	if want := int(acquired(resps, false)); fetched != want {
		t.Errorf("%d traces of an ACQUIRED invocation, want %d", fetched, want)
	}
	checkEMF(t, r.Pool.Lines(), map[string]float64{"LockAcquisitionSuccess": acquired(resps, false)})
}

// checkTree checks that the spans of one trace form one tree under one
// server span named after the function, and returns that span.
func checkTree(t *testing.T, id string, trace []receivedSpan) *tracepb.Span {
	t.Helper()
	ids := map[string]bool{}
	for _, s := range trace {
		ids[string(s.span.SpanId)] = true
	}
	var roots []*tracepb.Span
	for _, s := range trace {
		switch {
		case len(s.span.ParentSpanId) == 0:
			roots = append(roots, s.span)
		case !ids[string(s.span.ParentSpanId)]:
			t.Errorf("trace %s: span %s has a parent that is not in the trace", id, s.span.Name)
		}
	}
	if len(roots) != 1 || roots[0].Name != "lambda-fetch-cache" || roots[0].Kind != tracepb.Span_SPAN_KIND_SERVER {
		t.Errorf("trace %s: roots %v, want one server span lambda-fetch-cache; spans %v", id, roots, spanNames(trace))
		return nil
	}
	return roots[0]
}

// checkHolderTrace checks the trace of the invocation that held the lock:
// acquire and release under herdlock, the lock table's write under
// herdlock, and the cache calls under the server span (the first read) and
// herdlock (the holder's read and write).
func checkHolderTrace(t *testing.T, id string, trace []receivedSpan, server, root *tracepb.Span, lockTable, cacheTable string) {
	t.Helper()
	for _, name := range []string{"lock.acquire", "lock.release"} {
		if s := find(trace, name); len(s) != 1 || !isChild(s[0], root) {
			t.Errorf("trace %s: %d %s spans, want one under herdlock", id, len(s), name)
		}
	}
	if s := find(trace, "lock.release"); len(s) == 1 && stringAttrs(s[0])["herdlock.lock.result"] != "success" {
		t.Errorf("trace %s: release attributes %v, want result success", id, stringAttrs(s[0]))
	}
	calls := map[string]bool{}
	for _, s := range trace {
		if !strings.HasPrefix(s.span.Name, "DynamoDB.") {
			continue
		}
		parent := "other"
		switch {
		case isChild(s.span, server):
			parent = "server"
		case isChild(s.span, root):
			parent = "herdlock"
		}
		calls[s.span.Name+" "+stringAttrs(s.span)["aws.dynamodb.table_names"]+" under "+parent] = true
	}
	for _, want := range []string{
		"DynamoDB.GetItem " + cacheTable + " under server",
		"DynamoDB.UpdateItem " + lockTable + " under herdlock",
		"DynamoDB.GetItem " + cacheTable + " under herdlock",
		"DynamoDB.PutItem " + cacheTable + " under herdlock",
	} {
		if !calls[want] {
			t.Errorf("trace %s: no span %s among %v", id, want, calls)
		}
	}
}

// find returns the spans of trace named name.
func find(trace []receivedSpan, name string) []*tracepb.Span {
	var out []*tracepb.Span
	for _, s := range trace {
		if s.span.Name == name {
			out = append(out, s.span)
		}
	}
	return out
}

func spanNames(spans []receivedSpan) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.span.Name)
	}
	return out
}

func isChild(s, parent *tracepb.Span) bool {
	return string(s.ParentSpanId) == string(parent.SpanId)
}

// stringAttrs renders a span's attributes as strings (a string array as
// its items joined by commas).
func stringAttrs[S interface{ GetAttributes() []*commonpb.KeyValue }](s S) map[string]string {
	m := map[string]string{}
	for _, kv := range s.GetAttributes() {
		m[kv.Key] = anyString(kv.Value)
	}
	return m
}

func anyString(v *commonpb.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return fmt.Sprint(x.IntValue)
	case *commonpb.AnyValue_BoolValue:
		return fmt.Sprint(x.BoolValue)
	case *commonpb.AnyValue_DoubleValue:
		return fmt.Sprint(x.DoubleValue)
	case *commonpb.AnyValue_ArrayValue:
		var parts []string
		for _, e := range x.ArrayValue.GetValues() {
			parts = append(parts, anyString(e))
		}
		return strings.Join(parts, ",")
	}
	return ""
}

// otlpReceiver is an OTLP/HTTP trace receiver: it decodes each export
// request with the OTLP protobuf types and keeps the spans.
type otlpReceiver struct {
	srv   *httptest.Server
	mu    sync.Mutex // guards spans and bad
	spans []receivedSpan
	bad   []string // requests that were not valid OTLP/HTTP exports
}

type receivedSpan struct {
	span     *tracepb.Span
	resource map[string]string
}

func startOTLPReceiver(t *testing.T) *otlpReceiver {
	t.Helper()
	rc := &otlpReceiver{}
	rc.srv = httptest.NewServer(http.HandlerFunc(rc.serve))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *otlpReceiver) serve(w http.ResponseWriter, r *http.Request) {
	req, err := decodeExport(r)
	if err != nil {
		rc.mu.Lock()
		rc.bad = append(rc.bad, err.Error())
		rc.mu.Unlock()
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	rc.mu.Lock()
	for _, rs := range req.GetResourceSpans() {
		res := stringAttrs(rs.GetResource())
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				rc.spans = append(rc.spans, receivedSpan{span: s, resource: res})
			}
		}
	}
	rc.mu.Unlock()
	body, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(body)
}

// decodeExport checks the request as the OTLP/HTTP specification has it
// (POST /v1/traces, binary protobuf, optionally gzip) and decodes it.
func decodeExport(r *http.Request) (*coltracepb.ExportTraceServiceRequest, error) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" {
		return nil, fmt.Errorf("%s %s, want POST /v1/traces", r.Method, r.URL.Path)
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/x-protobuf" {
		return nil, fmt.Errorf("content type %q, want application/x-protobuf", ct)
	}
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			return nil, err
		}
		body = zr
	}
	b, err := io.ReadAll(body)
	if err != nil {
		return nil, err
	}
	req := &coltracepb.ExportTraceServiceRequest{}
	if err := proto.Unmarshal(b, req); err != nil {
		return nil, fmt.Errorf("body is not an ExportTraceServiceRequest: %w", err)
	}
	return req, nil
}

func (rc *otlpReceiver) received() ([]receivedSpan, []string) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]receivedSpan(nil), rc.spans...), append([]string(nil), rc.bad...)
}
