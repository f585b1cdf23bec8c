package httpmw_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/herdlock/herdlock/lockcore/storeapi"
	"github.com/herdlock/herdlock/middleware/httpmw"
)

// readingRow is one rule of how a front door's event carries what the key
// helpers read: the event as the front sends it (edit applied to the
// shape's sample, with the pair removed from where the shape's own key
// reads it), and the lock id the request names.
type readingRow struct {
	rule    string
	applies func(shape) bool
	key     string // "header" (x-herdlock-pair), "cookie" or "query" (pair)
	edit    func(m map[string]any)
	want    string
}

var reading = []readingRow{
	{
		rule:    "payload 2.0 carries the Cookie header in cookies, not in headers: " + docHTTPAPI + "; " + docFuncURL,
		applies: payload20, key: "cookie",
		edit: func(m map[string]any) { m["cookies"] = []string{"pair=GBPUSD", "theme=dark"} },
		want: credentialID("pair=GBPUSD; theme=dark"),
	},
	{
		rule:    "a repeated header's first value is in multiValueHeaders; headers holds the last: " + docREST,
		applies: func(s shape) bool { return s.name == "REST" }, key: "header",
		edit: func(m map[string]any) {
			setField(m, "headers", "x-herdlock-pair", "JPYUSD")
			setField(m, "multiValueHeaders", "x-herdlock-pair", []string{"GBPUSD", "JPYUSD"})
		},
		want: "GBPUSD",
	},
	{
		rule:    "with multi-value headers on, a repeated header arrives in multiValueHeaders only: " + docALB,
		applies: func(s shape) bool { return s.name == "ALBMultiValue" }, key: "header",
		edit: func(m map[string]any) {
			setField(m, "multiValueHeaders", "x-herdlock-pair", []string{"GBPUSD", "JPYUSD"})
		},
		want: "GBPUSD",
	},
	{
		rule:    "payload 2.0 joins a repeated header's values with commas, in headers: " + docHTTPAPI + "; " + docFuncURL,
		applies: payload20, key: "header",
		edit: func(m map[string]any) { setField(m, "headers", "x-herdlock-pair", "GBPUSD,JPYUSD") },
		want: "GBPUSD,JPYUSD",
	},
	{
		rule:    "a repeated query parameter's first value is in multiValueQueryStringParameters; queryStringParameters holds the last: " + docREST,
		applies: func(s shape) bool { return s.name == "REST" }, key: "query",
		edit: func(m map[string]any) {
			m["queryStringParameters"].(map[string]any)["pair"] = "JPYUSD"
			m["multiValueQueryStringParameters"].(map[string]any)["pair"] = []string{"GBPUSD", "JPYUSD"}
		},
		want: "GBPUSD",
	},
	{
		rule:    "payload 2.0 joins a repeated query parameter's values with commas: " + docHTTPAPI,
		applies: payload20, key: "query",
		edit: func(m map[string]any) { m["queryStringParameters"].(map[string]any)["pair"] = "GBPUSD,JPYUSD" },
		want: "GBPUSD,JPYUSD",
	},
	{
		rule:    "the load balancer does not decode URL-encoded query parameters: " + docALB,
		applies: func(s shape) bool { return s.name == "ALB" }, key: "query",
		edit: func(m map[string]any) { m["queryStringParameters"].(map[string]any)["pair"] = "GBP%2FUSD" },
		want: "GBP/USD",
	},
	{
		rule:    "API Gateway and function URLs pass query values decoded; they are not decoded again: " + docREST + "; " + docHTTPAPI + "; " + docFuncURL,
		applies: func(s shape) bool { return !albShape(s) }, key: "query",
		edit: func(m map[string]any) {
			m["queryStringParameters"].(map[string]any)["pair"] = "GBP%2FUSD"
			if mv, ok := m["multiValueQueryStringParameters"].(map[string]any); ok {
				mv["pair"] = []string{"GBP%2FUSD"}
			}
		},
		want: "GBP%2FUSD",
	},
}

// credentialID is the lock id of a key taken from a credential header
// with value v: its SHA-256, never the credential itself.
func credentialID(v string) string {
	sum := sha256.Sum256([]byte(v))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// setField sets name in the event's map field to v, replacing the names
// that differ from it only in case.
func setField(m map[string]any, field, name string, v any) {
	fm := m[field].(map[string]any)
	for k := range fm {
		if strings.EqualFold(k, name) {
			delete(fm, k)
		}
	}
	fm[name] = v
}

// keyed answers an event of s with the key helper kind on store.
func keyed(t *testing.T, s shape, kind string, store storeapi.Store, event []byte) got {
	t.Helper()
	ok := func(context.Context, any) (httpmw.Response[rate], error) { return httpmw.OK(rate{}), nil }
	ctx, cancel := invocation(10 * time.Second)
	defer cancel()
	var resp any
	var err error
	switch s.name {
	case "REST":
		resp, err = serveWithKey(ctx, httpmw.NewREST[rate], keyOfKind[events.APIGatewayProxyRequest](kind), ok, store, event)
	case "HTTPAPI":
		resp, err = serveWithKey(ctx, httpmw.NewHTTPAPI[rate], keyOfKind[events.APIGatewayV2HTTPRequest](kind), ok, store, event)
	case "FunctionURL":
		resp, err = serveWithKey(ctx, httpmw.NewFunctionURL[rate], keyOfKind[events.LambdaFunctionURLRequest](kind), ok, store, event)
	default:
		resp, err = serveWithKey(ctx, httpmw.NewALB[rate], keyOfKind[events.ALBTargetGroupRequest](kind), ok, store, event)
	}
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(resp)
	g, err := decodeResponse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func keyOfKind[Req httpmw.Request](kind string) func(context.Context, Req) (string, error) {
	switch kind {
	case "header":
		return httpmw.Header[Req]("x-herdlock-pair")
	case "cookie":
		return httpmw.Header[Req]("Cookie")
	}
	return httpmw.Query[Req]("pair")
}

func serveWithKey[Req httpmw.Request, Resp any](ctx context.Context,
	adapter func(func(context.Context, Req) (httpmw.Response[rate], error), storeapi.Store, func(context.Context, Req) (string, error), ...httpmw.Option) (func(context.Context, Req) (Resp, error), error),
	key func(context.Context, Req) (string, error), h func(context.Context, any) (httpmw.Response[rate], error), store storeapi.Store, event []byte) (Resp, error) {
	var req Req
	if err := json.Unmarshal(event, &req); err != nil {
		var zero Resp
		return zero, err
	}
	f, err := adapter(func(ctx context.Context, r Req) (httpmw.Response[rate], error) { return h(ctx, r) }, store, key, quiet())
	if err != nil {
		var zero Resp
		return zero, err
	}
	return f(ctx, req)
}

func TestConformanceOfWhatTheKeysRead(t *testing.T) {
	for _, tt := range reading {
		for _, s := range shapes {
			if !tt.applies(s) {
				continue
			}
			t.Run(s.name+"/"+tt.rule, func(t *testing.T) {
				var m map[string]any
				if err := json.Unmarshal(sample(t, s, samplePair), &m); err != nil {
					t.Fatal(err)
				}
				tt.edit(m)
				event, _ := json.Marshal(m)
				store := newKeyRecorder()
				if g := keyed(t, s, tt.key, store, event); g.Status != 200 {
					t.Fatalf("status %d (body %s), want 200", g.Status, g.Body)
				}
				if ids := store.asked(); len(ids) != 1 || ids[0] != tt.want {
					t.Errorf("locks asked for %q, want [%q]", ids, tt.want)
				}
			})
		}
	}
}
