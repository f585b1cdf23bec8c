package httpmw_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/middleware/httpmw"
)

// Documents the conformance rows cite.
const (
	docREST    = "AWS, Lambda proxy integrations in API Gateway (https://docs.aws.amazon.com/apigateway/latest/developerguide/set-up-lambda-proxy-integrations.html)"
	docHTTPAPI = "AWS, Create AWS Lambda proxy integrations for HTTP APIs in API Gateway, payload format version 2.0 (https://docs.aws.amazon.com/apigateway/latest/developerguide/http-api-develop-integrations-lambda.html)"
	docFuncURL = "AWS, Invoking Lambda function URLs, request and response payloads (https://docs.aws.amazon.com/lambda/latest/dg/urls-invocation.html)"
	docALB     = "AWS, Use Lambda functions as targets of an Application Load Balancer (https://docs.aws.amazon.com/elasticloadbalancing/latest/application/lambda-functions.html)"
)

// step is one request of a conformance row: the method, and the pair
// (samplePair when empty).
type step struct {
	method string
	pair   string
}

// conformanceRow is one rule, checked on every front door it applies to
// through the real wrap path on a memory store: the requests are made in
// order, one after another, and check judges what each client got and
// how often the handler ran.
type conformanceRow struct {
	rule    string // the rule, and the document that states it
	applies func(s shape) bool
	h       handler
	opts    []httpmw.Option
	steps   []step
	check   func(t *testing.T, s shape, answers []got, calls int)
}

func every(shape) bool       { return true }
func gateway(s shape) bool   { return s.name == "REST" || s.name == "HTTPAPI" }
func payload20(s shape) bool { return s.name == "HTTPAPI" || s.name == "FunctionURL" }
func albShape(s shape) bool  { return strings.HasPrefix(s.name, "ALB") }

// byMethod answers a preflight OPTIONS with 204 and any other method with
// 200 and the rate, as a CORS-enabled route does.
func byMethod(ctx context.Context, pair string) (httpmw.Response[rate], error) {
	if methodOf(ctx) == http.MethodOptions {
		return httpmw.Response[rate]{Status: http.StatusNoContent}, nil
	}
	return httpmw.OK(rate{Pair: pair, Bid: 1.1}), nil
}

// echoMethod answers 200 with the method in the pair, so that a client can
// tell whose handler made its answer.
func echoMethod(ctx context.Context, pair string) (httpmw.Response[rate], error) {
	return httpmw.OK(rate{Pair: pair + "/" + methodOf(ctx)}), nil
}

func wantCalls(t *testing.T, calls, want int) {
	t.Helper()
	if calls != want {
		t.Errorf("handler calls %d, want %d", calls, want)
	}
}

func wantStatus(t *testing.T, answers []got, want ...int) {
	t.Helper()
	for i, g := range answers {
		if g.Status != want[i] {
			t.Errorf("answer %d: status %d (body %s), want %d", i, g.Status, g.Body, want[i])
		}
	}
}

func wantBody(t *testing.T, g got, want string) {
	t.Helper()
	if string(g.Body) != want {
		t.Errorf("body %q, want %q", g.Body, want)
	}
}

var conformance = []conformanceRow{
	{
		rule:    "RFC 9110 §9.2.1: a GET (safe) may be answered from another GET's answer",
		applies: every, h: echoMethod, opts: []httpmw.Option{httpmw.WithFreshSuccess(time.Minute)},
		steps: []step{{method: "GET"}, {method: "GET"}},
		check: func(t *testing.T, _ shape, a []got, calls int) {
			wantCalls(t, calls, 1)
			wantStatus(t, a, 200, 200)
			wantBody(t, a[1], string(a[0].Body))
		},
	},
	{
		rule:    "RFC 9110 §9.2.1: a PUT (unsafe) is not answered from a GET's answer; its own handler runs",
		applies: every, h: echoMethod, opts: []httpmw.Option{httpmw.WithFreshSuccess(time.Minute)},
		steps: []step{{method: "GET"}, {method: "PUT"}},
		check: func(t *testing.T, _ shape, a []got, calls int) {
			wantCalls(t, calls, 2)
			wantStatus(t, a, 200, 200)
			wantBody(t, a[1], `{"pair":"EURUSD/PUT","bid":0}`)
		},
	},
	{
		rule:    "RFC 9110 §9.2.1, §9.3.3: a POST is not answered from another POST's answer",
		applies: every, h: echoMethod, opts: []httpmw.Option{httpmw.WithFreshSuccess(time.Minute)},
		steps: []step{{method: "POST"}, {method: "POST"}, {method: "DELETE"}},
		check: func(t *testing.T, _ shape, a []got, calls int) {
			wantCalls(t, calls, 3)
			wantBody(t, a[2], `{"pair":"EURUSD/DELETE","bid":0}`)
		},
	},
	{
		rule:    "RFC 9110 §9.3.7, Fetch CORS-preflight: an OPTIONS 204 never answers the GET after it",
		applies: every, h: byMethod, opts: []httpmw.Option{httpmw.WithFreshSuccess(time.Minute)},
		steps: []step{{method: "OPTIONS"}, {method: "GET"}},
		check: func(t *testing.T, _ shape, a []got, calls int) {
			wantCalls(t, calls, 2)
			wantStatus(t, a, 204, 200)
			wantBody(t, a[1], `{"pair":"EURUSD","bid":1.1}`)
		},
	},
	{
		rule:    "RFC 9110 §9.1: method names are case-sensitive: \"get\" is not GET and shares nothing",
		applies: every, h: echoMethod, opts: []httpmw.Option{httpmw.WithFreshSuccess(time.Minute)},
		steps: []step{{method: "GET"}, {method: "get"}},
		check: func(t *testing.T, _ shape, a []got, calls int) {
			wantCalls(t, calls, 2)
			wantBody(t, a[1], `{"pair":"EURUSD/get","bid":0}`)
		},
	},
	{
		rule:    "RFC 9110 §9.3.2: a HEAD is answered from the GET's answer: its status and header fields, no content",
		applies: every, h: echoMethod, opts: []httpmw.Option{httpmw.WithFreshSuccess(time.Minute)},
		steps: []step{{method: "GET"}, {method: "HEAD"}},
		check: func(t *testing.T, _ shape, a []got, calls int) {
			wantCalls(t, calls, 1)
			wantStatus(t, a, 200, 200)
			wantBody(t, a[1], "")
			if a[1].header("Content-Type") != a[0].header("Content-Type") || a[1].header("Cache-Control") == "" {
				t.Errorf("HEAD headers %v, want the GET's %v", a[1].Header, a[0].Header)
			}
		},
	},
	{
		rule:    "RFC 9110 §9.3.2: a GET after a HEAD gets the content the HEAD did not",
		applies: every, h: okHandler, opts: []httpmw.Option{httpmw.WithFreshSuccess(time.Minute)},
		steps: []step{{method: "HEAD"}, {method: "GET"}},
		check: func(t *testing.T, _ shape, a []got, calls int) {
			wantCalls(t, calls, 1)
			wantBody(t, a[0], "")
			wantBody(t, a[1], `{"pair":"EURUSD","bid":1.1}`)
		},
	},
	{
		rule:    "RFC 9110 §9.3.2, RFC 9457 §3: a HEAD's error answer has the problem's header fields and no content",
		applies: every, h: failing(&hintedError{code: "upstream_throttled", wait: 10 * time.Second}),
		steps: []step{{method: "HEAD"}},
		check: func(t *testing.T, _ shape, a []got, _ int) {
			wantStatus(t, a, 429)
			wantBody(t, a[0], "")
			if a[0].header("Content-Type") != "application/problem+json" || a[0].header("Retry-After") == "" {
				t.Errorf("headers %v, want the problem's media type and Retry-After", a[0].Header)
			}
		},
	},
	{
		rule:    "RFC 9110 §15.3.5: a 204 has no content (and no media type), on every shape; " + docREST + "; " + docALB,
		applies: every, h: func(context.Context, string) (httpmw.Response[rate], error) {
			return httpmw.Response[rate]{Status: http.StatusNoContent, Body: rate{Pair: "x"}}, nil
		},
		steps: []step{{method: "GET"}, {method: "GET"}},
		check: func(t *testing.T, _ shape, a []got, calls int) {
			wantCalls(t, calls, 1)
			for i, g := range a {
				if g.Status != 204 || len(g.Body) != 0 || g.header("Content-Type") != "" || g.Base64 {
					t.Errorf("answer %d: %d %q Content-Type %q base64 %t, want 204 without content", i, g.Status, g.Body, g.header("Content-Type"), g.Base64)
				}
			}
		},
	},
	{
		rule:    "RFC 9110 §15.3.6: a 205 has no content (and no media type), on every shape",
		applies: every, h: func(context.Context, string) (httpmw.Response[rate], error) {
			return httpmw.Response[rate]{Status: http.StatusResetContent, Body: rate{Pair: "x"}}, nil
		},
		steps: []step{{method: "GET"}, {method: "POST"}},
		check: func(t *testing.T, _ shape, a []got, _ int) {
			for i, g := range a {
				if g.Status != 205 || len(g.Body) != 0 || g.header("Content-Type") != "" || g.Base64 {
					t.Errorf("answer %d: %d %q Content-Type %q base64 %t, want 205 without content", i, g.Status, g.Body, g.header("Content-Type"), g.Base64)
				}
			}
		},
	},
	{
		rule:    "RFC 9110 §15.5.1, RFC 9457 §3.1: a bad request is 400 application/problem+json with type, title, status",
		applies: every, h: failing(fmt.Errorf("%w: amount is not a number", httpmw.ErrBadRequest)),
		steps: []step{{method: "GET"}, {method: "POST"}},
		check: func(t *testing.T, _ shape, a []got, _ int) {
			wantStatus(t, a, 400, 400)
			for _, g := range a {
				if p := problem(t, g); p.Reason != "bad_request" {
					t.Errorf("problem code %q, want %q", p.Reason, "bad_request")
				}
			}
		},
	},
	{
		rule:    "RFC 9457 §3.1: the problem's members are type (a URI reference, about:blank), title, status equal to the response's; RFC 9111 §5.2.2.5: no-store",
		applies: every, h: failing(&hintedError{code: "upstream_unavailable", wait: 20 * time.Second}),
		steps: []step{{method: "GET"}},
		check: func(t *testing.T, _ shape, a []got, _ int) {
			var members map[string]any
			if err := json.Unmarshal(a[0].Body, &members); err != nil {
				t.Fatal(err)
			}
			if members["type"] != "about:blank" || members["title"] != http.StatusText(a[0].Status) || members["status"] != float64(a[0].Status) || len(members) != 4 {
				t.Errorf("problem members %v, want type, title, status and code", members)
			}
			if a[0].header("Cache-Control") != "no-store" {
				t.Errorf("Cache-Control %q, want no-store", a[0].header("Cache-Control"))
			}
		},
	},
	{
		rule:    "RFC 9110 §10.2.3, RFC 6585 §4: a 429's Retry-After is delay-seconds, whole, no earlier than the shared not-before",
		applies: every, h: failing(&hintedError{code: "upstream_throttled", wait: 30 * time.Second}),
		steps: []step{{method: "GET"}, {method: "GET"}},
		check: func(t *testing.T, _ shape, a []got, calls int) {
			wantCalls(t, calls, 1)
			wantStatus(t, a, 429, 429)
			for _, g := range a {
				checkRetryAfter(t, g.header("Retry-After"), 30)
			}
		},
	},
	{
		rule:    "RFC 9111 §5.2.2.1: a fresh 200 carries max-age for what is left of the window, in whole seconds",
		applies: every, h: okHandler, opts: []httpmw.Option{httpmw.WithFreshSuccess(time.Minute)},
		steps: []step{{method: "GET"}},
		check: func(t *testing.T, _ shape, a []got, _ int) {
			if a[0].header("Cache-Control") != "max-age=60" {
				t.Errorf("Cache-Control %q, want max-age=60", a[0].header("Cache-Control"))
			}
		},
	},
	{
		rule:    "a binary body is base64 with isBase64Encoded true: " + docREST + "; " + docHTTPAPI + "; " + docFuncURL + "; " + docALB,
		applies: every, h: okHandler, opts: []httpmw.Option{httpmw.WithCodec(binaryCodec{})},
		steps: []step{{method: "GET"}, {method: "GET"}},
		check: func(t *testing.T, _ shape, a []got, _ int) {
			for i, g := range a {
				if !g.Base64 || string(g.Body) != "\x00\x01EURUSD\xff" || g.header("Content-Type") != "application/octet-stream" {
					t.Errorf("answer %d: base64 %t body %q, want base64 of the codec's bytes", i, g.Base64, g.Body)
				}
			}
		},
	},
	{
		rule:    "a text body is sent as it is, isBase64Encoded false: " + docREST + "; " + docHTTPAPI,
		applies: every, h: okHandler,
		steps: []step{{method: "GET"}},
		check: func(t *testing.T, _ shape, a []got, _ int) {
			if a[0].Base64 || string(a[0].Body) != `{"pair":"EURUSD","bid":1.1}` {
				t.Errorf("base64 %t body %q, want the JSON as it is", a[0].Base64, a[0].Body)
			}
		},
	},
	{
		rule:    "with multi-value headers on (the request has multiValueHeaders), the response sets multiValueHeaders, not headers: " + docALB,
		applies: func(s shape) bool { return s.name == "ALBMultiValue" }, h: okHandler,
		steps: []step{{method: "GET"}},
		check: func(t *testing.T, _ shape, a []got, _ int) {
			if set(a[0].Raw, "headers") || !set(a[0].Raw, "multiValueHeaders") {
				t.Errorf("response fields %v, want multiValueHeaders only", keys(a[0].Raw))
			}
		},
	},
	{
		rule:    "without multi-value headers the response sets headers only, and statusDescription is the status and its reason phrase: " + docALB,
		applies: func(s shape) bool { return s.name == "ALB" }, h: okHandler,
		steps: []step{{method: "GET"}},
		check: func(t *testing.T, _ shape, a []got, _ int) {
			if set(a[0].Raw, "multiValueHeaders") || !set(a[0].Raw, "headers") || a[0].Desc != "200 OK" {
				t.Errorf("response fields %v, statusDescription %q; want headers and \"200 OK\"", keys(a[0].Raw), a[0].Desc)
			}
		},
	},
}

// set reports whether the response sets the field (not absent, not null).
func set(m map[string]json.RawMessage, field string) bool {
	v, ok := m[field]
	return ok && string(v) != "null"
}

// keys lists the fields of a response.
func keys(m map[string]json.RawMessage) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}

// binaryCodec encodes a rate as bytes that are not text.
type binaryCodec struct{}

func (binaryCodec) ContentType() string { return "application/octet-stream" }
func (binaryCodec) Encode(v any) ([]byte, error) {
	return []byte("\x00\x01" + v.(rate).Pair + "\xff"), nil
}

func TestConformance(t *testing.T) {
	for _, tt := range conformance {
		for _, s := range shapes {
			if !tt.applies(s) {
				continue
			}
			t.Run(s.name+"/"+tt.rule, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					c := &counting{h: tt.h}
					serve := s.wrap(c.handle, lockcore.NewMemoryStore(), append([]httpmw.Option{quiet()}, tt.opts...)...)
					var answers []got
					for _, st := range tt.steps {
						pair := st.pair
						if pair == "" {
							pair = samplePair
						}
						answers = append(answers, request(t, serve, withMethod(t, sample(t, s, pair), st.method), 10*time.Second))
					}
					tt.check(t, s, answers, c.count())
				})
			})
		}
	}
}
