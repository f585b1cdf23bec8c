package idempotency_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/herdlock/herdlock/internal/faultstore"
	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/lockcore/storeapi"
	"github.com/herdlock/herdlock/middleware/httpmw"
	"github.com/herdlock/herdlock/middleware/idempotency"
)

// createOrder is the HTTP API handler of the tests: it counts its runs
// and answers 201 with the run number, or the status it is told.
type createOrder struct {
	runs    atomic.Int32
	status  int           // 0: 201
	block   chan struct{} // when not nil, runs wait for it
	started chan struct{} // when not nil, runs send on it first
}

func (c *createOrder) handle(_ context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	n := c.runs.Add(1)
	if c.started != nil {
		c.started <- struct{}{}
	}
	if c.block != nil {
		<-c.block
	}
	status := c.status
	if status == 0 {
		status = http.StatusCreated
	}
	return events.APIGatewayV2HTTPResponse{StatusCode: status, Headers: map[string]string{"Content-Type": "application/json"},
		Body: `{"order":` + string(rune('0'+n)) + `}`}, nil
}

func post(path, key, body string) events.APIGatewayV2HTTPRequest {
	req := events.APIGatewayV2HTTPRequest{RouteKey: "POST /orders", RawPath: path, Body: body,
		Headers: map[string]string{"content-type": "application/json"}}
	req.RequestContext.HTTP.Method = http.MethodPost
	if key != "" {
		req.Headers["idempotency-key"] = key
	}
	return req
}

func problemCode(t *testing.T, resp events.APIGatewayV2HTTPResponse) string {
	t.Helper()
	if resp.Headers["Content-Type"] != "application/problem+json" {
		return ""
	}
	var p httpmw.Problem
	if err := json.Unmarshal([]byte(resp.Body), &p); err != nil {
		t.Fatalf("problem body %q: %v", resp.Body, err)
	}
	return p.Reason
}

// draft-ietf-httpapi-idempotency-key-header-06 and Stripe, row by row:
// the key in the Idempotency-Key header (an sf-string or a bare token);
// 400 when it is missing; a replay of the first answer, marked
// Idempotent-Replayed, for the same key and payload; 422 for the key
// reused with another payload (another body, or another path of the
// route); a safe method needs no key; a 4xx answer is replayed, a 5xx is
// not kept.
func TestHTTPIdempotencyKey(t *testing.T) {
	type step struct {
		req        events.APIGatewayV2HTTPRequest
		wantStatus int
		wantCode   string
		wantReplay bool
	}
	get := post("/orders", "", "")
	get.RequestContext.HTTP.Method = http.MethodGet
	tests := []struct {
		name     string
		status   int // the handler's
		opts     []idempotency.Option
		steps    []step
		wantRuns int32
	}{
		{"a replay for the same key and body, in any key order", 0, nil, []step{
			{post("/orders", `"k-1"`, `{"sku":"a","n":1}`), 201, "", false},
			{post("/orders", `k-1`, `{"n":1, "sku":"a"}`), 201, "", true},
		}, 1},
		{"422 for another body or path", 0, nil, []step{
			{post("/orders", "k-1", `{"sku":"a"}`), 201, "", false},
			{post("/orders", "k-1", `{"sku":"b"}`), 422, "idempotency_key_reused", false},
			{post("/orders/x", "k-1", `{"sku":"a"}`), 422, "idempotency_key_reused", false},
		}, 1},
		{"400 without a key, unless optional", 0, nil, []step{
			{post("/orders", "", `{}`), 400, "bad_idempotency_key", false},
			{post("/orders", strings.Repeat("k", 255+1), `{}`), 400, "bad_idempotency_key", false},
		}, 0},
		{"a key of 255 bytes, Stripe's longest", 0, nil, []step{
			{post("/orders", strings.Repeat("k", 255), `{}`), 201, "", false},
			{post("/orders", strings.Repeat("k", 255), `{}`), 201, "", true},
		}, 1},
		{"optional: without a key every request runs", 0, []idempotency.Option{idempotency.WithKeys(idempotency.Keys{Optional: true})}, []step{
			{post("/orders", "", `{}`), 201, "", false},
			{post("/orders", "", `{}`), 201, "", false},
		}, 2},
		{"a safe method needs no key", 0, nil, []step{{get, 201, "", false}, {get, 201, "", false}}, 2},
		{"a 4xx answer is replayed", 409, nil, []step{
			{post("/orders", "k", `{}`), 409, "", false},
			{post("/orders", "k", `{}`), 409, "", true},
		}, 1},
		{"a 5xx answer is not kept", 502, nil, []step{
			{post("/orders", "k", `{}`), 502, "", false},
			{post("/orders", "k", `{}`), 502, "", false},
		}, 2},
		{"a 5xx answer kept: 503 with Retry-After in the window", 502, []idempotency.Option{idempotency.WithRetention(idempotency.Retention{Errors: time.Minute})}, []step{
			{post("/orders", "k", `{}`), 502, "", false},
			{post("/orders", "k", `{}`), 503, "failed_earlier", false},
		}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := &createOrder{status: tt.status}
				h := idempotency.WrapHTTP(c.handle, lockcore.NewMemoryStore(), append([]idempotency.Option{quiet()}, tt.opts...)...)
				for i, s := range tt.steps {
					ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
					resp, err := h(ctx, s.req)
					cancel()
					if err != nil || resp.StatusCode != s.wantStatus || problemCode(t, resp) != s.wantCode ||
						(resp.Headers["Idempotent-Replayed"] == "true") != s.wantReplay {
						t.Errorf("step %d = %d %v %q, %v; want %d, code %q, replayed %v", i, resp.StatusCode, resp.Headers, resp.Body, err,
							s.wantStatus, s.wantCode, s.wantReplay)
					}
					if s.wantCode == "failed_earlier" && resp.Headers["Retry-After"] == "" {
						t.Errorf("step %d: no Retry-After", i)
					}
				}
				if got := c.runs.Load(); got != tt.wantRuns {
					t.Errorf("handler runs = %d, want %d", got, tt.wantRuns)
				}
			})
		})
	}
}

// The draft answers 409 to a concurrent duplicate; here it waits for the
// first answer and gets it, replayed, and gets 409 only when its deadline
// comes first.
func TestHTTPConcurrentDuplicate(t *testing.T) {
	tests := []struct {
		name       string
		timeout    time.Duration
		wantStatus int
		wantCode   string
	}{
		{"the wait can finish: the answer", time.Minute, 201, ""},
		{"the wait cannot finish: 409", 4 * time.Second, 409, "idempotency_key_in_progress"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := &createOrder{block: make(chan struct{}), started: make(chan struct{}, 1)}
				store := lockcore.NewMemoryStore()
				first := idempotency.WrapHTTP(c.handle, store, quiet())
				var wg sync.WaitGroup
				wg.Go(func() {
					ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
					defer cancel()
					_, _ = first(ctx, post("/orders", "k", `{}`))
				})
				<-c.started
				go func() { time.Sleep(10 * time.Second); close(c.block) }()
				ctx, cancel := context.WithTimeout(t.Context(), tt.timeout)
				defer cancel()
				resp, err := idempotency.WrapHTTP(c.handle, store, quiet())(ctx, post("/orders", "k", `{}`))
				wg.Wait()
				if err != nil || resp.StatusCode != tt.wantStatus || problemCode(t, resp) != tt.wantCode {
					t.Errorf("duplicate = %d %q, %v; want %d, code %q", resp.StatusCode, resp.Body, err, tt.wantStatus, tt.wantCode)
				}
				if got := c.runs.Load(); got != 1 {
					t.Errorf("handler runs = %d, want 1", got)
				}
			})
		})
	}
}

// The request and response shapes must be one API's: a REST request
// answered with an HTTP API response is a configuration error.
func TestHTTPShapes(t *testing.T) {
	h := idempotency.WrapHTTP(func(context.Context, events.APIGatewayProxyRequest) (events.APIGatewayV2HTTPResponse, error) {
		return events.APIGatewayV2HTTPResponse{}, nil
	}, lockcore.NewMemoryStore())
	if _, err := h(context.Background(), events.APIGatewayProxyRequest{HTTPMethod: "POST"}); err == nil || !strings.Contains(err.Error(), "is not answered with") {
		t.Errorf("mismatched shapes = %v, want ErrConfig", err)
	}
}

// shapeCase runs a first request, its duplicate and one without a key
// through WrapHTTP for one event shape, and reports the statuses and
// whether the duplicate was marked a replay.
func shapeCase[Req httpmw.Request, Resp idempotency.HTTPResponse](t *testing.T, req func(key string) Req,
	answer func() Resp, status func(Resp) int, replayed func(Resp) bool) ([3]int, bool, int32) {
	var runs atomic.Int32
	h := idempotency.WrapHTTP(func(context.Context, Req) (Resp, error) { runs.Add(1); return answer(), nil },
		lockcore.NewMemoryStore(), quiet())
	var got [3]int
	var replay bool
	for i, key := range []string{"k", "k", ""} {
		resp, err := h(t.Context(), req(key))
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		got[i] = status(resp)
		if i == 1 {
			replay = replayed(resp)
		}
	}
	return got, replay, runs.Load()
}

// Every shape of httpmw.Request: a duplicate is replayed with
// Idempotent-Replayed, a request without a key is 400.
func TestHTTPShapesReplay(t *testing.T) {
	hdr := func(key string) map[string]string {
		if key == "" {
			return map[string]string{}
		}
		return map[string]string{"Idempotency-Key": key}
	}
	tests := []struct {
		name string
		run  func(t *testing.T) ([3]int, bool, int32)
	}{
		{"REST", func(t *testing.T) ([3]int, bool, int32) {
			return shapeCase(t, func(k string) events.APIGatewayProxyRequest {
				return events.APIGatewayProxyRequest{HTTPMethod: "POST", Resource: "/orders", Path: "/orders", Headers: hdr(k), Body: "{}"}
			}, func() events.APIGatewayProxyResponse { return events.APIGatewayProxyResponse{StatusCode: 201} },
				func(r events.APIGatewayProxyResponse) int { return r.StatusCode },
				func(r events.APIGatewayProxyResponse) bool { return r.Headers["Idempotent-Replayed"] == "true" })
		}},
		{"HTTP API", func(t *testing.T) ([3]int, bool, int32) {
			return shapeCase(t, func(k string) events.APIGatewayV2HTTPRequest { return post("/orders", k, "{}") },
				func() events.APIGatewayV2HTTPResponse { return events.APIGatewayV2HTTPResponse{StatusCode: 201} },
				func(r events.APIGatewayV2HTTPResponse) int { return r.StatusCode },
				func(r events.APIGatewayV2HTTPResponse) bool { return r.Headers["Idempotent-Replayed"] == "true" })
		}},
		{"function URL", func(t *testing.T) ([3]int, bool, int32) {
			return shapeCase(t, func(k string) events.LambdaFunctionURLRequest {
				r := events.LambdaFunctionURLRequest{RawPath: "/", Headers: hdr(k), Body: "{}"}
				r.RequestContext.HTTP.Method = "POST"
				return r
			}, func() events.LambdaFunctionURLResponse { return events.LambdaFunctionURLResponse{StatusCode: 201} },
				func(r events.LambdaFunctionURLResponse) int { return r.StatusCode },
				func(r events.LambdaFunctionURLResponse) bool { return r.Headers["Idempotent-Replayed"] == "true" })
		}},
		{"ALB, multi-value headers", func(t *testing.T) ([3]int, bool, int32) {
			return shapeCase(t, func(k string) events.ALBTargetGroupRequest {
				mv := map[string][]string{}
				if k != "" {
					mv["idempotency-key"] = []string{k}
				}
				return events.ALBTargetGroupRequest{HTTPMethod: "POST", Path: "/orders", MultiValueHeaders: mv, Body: "{}"}
			}, func() events.ALBTargetGroupResponse {
				return events.ALBTargetGroupResponse{StatusCode: 201, MultiValueHeaders: map[string][]string{}}
			},
				func(r events.ALBTargetGroupResponse) int { return r.StatusCode },
				func(r events.ALBTargetGroupResponse) bool {
					return r.MultiValueHeaders["Idempotent-Replayed"][0] == "true"
				})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				statuses, replay, runs := tt.run(t)
				if statuses != [3]int{201, 201, 400} || !replay || runs != 1 {
					t.Errorf("statuses %v, replayed %v, runs %d; want [201 201 400], true, 1", statuses, replay, runs)
				}
			})
		})
	}
}

// A response that asks the client to retry (408 Request Timeout, 425 Too
// Early, 429 Too Many Requests) is not the operation's answer: replayed
// for the retention, it would answer every retry the same, long after its
// Retry-After. Like a 5xx it is not kept: the retry runs the handler.
func TestHTTPRetryLaterAnswerIsNotReplayed(t *testing.T) {
	tests := []struct {
		name   string
		status int
	}{
		{"408 Request Timeout", http.StatusRequestTimeout},
		{"425 Too Early", http.StatusTooEarly},
		{"429 Too Many Requests", http.StatusTooManyRequests},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := &createOrder{status: tt.status}
				h := idempotency.WrapHTTP(c.handle, lockcore.NewMemoryStore(), quiet())
				ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
				defer cancel()
				if resp, err := h(ctx, post("/orders", `"k"`, `{}`)); err != nil || resp.StatusCode != tt.status {
					t.Fatalf("first = %d, %v; want %d", resp.StatusCode, err, tt.status)
				}
				c.status = 0 // the handler can now answer
				resp, err := h(ctx, post("/orders", `"k"`, `{}`))
				if err != nil || resp.StatusCode != http.StatusCreated || resp.Headers["Idempotent-Replayed"] != "" {
					t.Errorf("retry = %d %v, %v; want 201, not a replay", resp.StatusCode, resp.Headers, err)
				}
				if got := c.runs.Load(); got != 2 {
					t.Errorf("handler runs = %d, want 2", got)
				}
			})
		})
	}
}

// The query is part of the request: POST /transfers?amount=5 and
// ?amount=500 with one key are two requests, and the second is 422, not
// a replay of the first's answer. The same parameters in another order
// are the same request.
func TestHTTPQueryIsFingerprinted(t *testing.T) {
	withQuery := func(q string) events.APIGatewayV2HTTPRequest {
		req := post("/orders", `"k"`, `{}`)
		req.RawQueryString = q
		return req
	}
	rest := func(q map[string][]string) events.APIGatewayProxyRequest {
		return events.APIGatewayProxyRequest{HTTPMethod: "POST", Resource: "/orders", Path: "/orders",
			Headers: map[string]string{"Idempotency-Key": `"k"`}, MultiValueQueryStringParameters: q, Body: "{}"}
	}
	tests := []struct {
		name   string
		second func(t *testing.T, store storeapi.Store, c *createOrder) int // its status after a first request with amount=5&currency=eur
		want   int
	}{
		{"HTTP API: another query", func(t *testing.T, store storeapi.Store, c *createOrder) int {
			h := idempotency.WrapHTTP(c.handle, store, quiet())
			_, _ = h(t.Context(), withQuery("amount=5&currency=eur"))
			resp, _ := h(t.Context(), withQuery("amount=500&currency=eur"))
			return resp.StatusCode
		}, http.StatusUnprocessableEntity},
		{"HTTP API: the same query in another order", func(t *testing.T, store storeapi.Store, c *createOrder) int {
			h := idempotency.WrapHTTP(c.handle, store, quiet())
			_, _ = h(t.Context(), withQuery("amount=5&currency=eur"))
			resp, _ := h(t.Context(), withQuery("currency=eur&amount=5"))
			return resp.StatusCode
		}, http.StatusCreated},
		{"REST: another query", func(t *testing.T, store storeapi.Store, c *createOrder) int {
			h := idempotency.WrapHTTP(func(context.Context, events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
				c.runs.Add(1)
				return events.APIGatewayProxyResponse{StatusCode: http.StatusCreated}, nil
			}, store, quiet())
			_, _ = h(t.Context(), rest(map[string][]string{"amount": {"5"}, "currency": {"eur"}}))
			resp, _ := h(t.Context(), rest(map[string][]string{"amount": {"500"}, "currency": {"eur"}}))
			return resp.StatusCode
		}, http.StatusUnprocessableEntity},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := &createOrder{}
				if got := tt.second(t, lockcore.NewMemoryStore(), c); got != tt.want {
					t.Errorf("second request = %d, want %d", got, tt.want)
				}
				if got := c.runs.Load(); got != 1 {
					t.Errorf("handler runs = %d, want 1", got)
				}
			})
		})
	}
}

// The header is an RFC 8941 sf-string (draft-ietf-httpapi-idempotency-key-
// header-06 §2.1), and a client must not send it twice. A bare value of
// visible ASCII without quotes, commas or backslashes is read leniently
// as the string of the same characters (Stripe's clients send UUIDs
// bare). Anything else is 400, not a key read some other way: Go escapes
// ("\u0041" is not "A"), non-ASCII, a second header (two values, or API
// Gateway's join of them with a comma), text after the closing quote.
func TestHTTPKeySyntax(t *testing.T) {
	v2 := func(value string) events.APIGatewayV2HTTPRequest { return post("/orders", value, `{}`) }
	tests := []struct {
		name string
		req  func() any
		want int
	}{
		{"sf-string", func() any { return v2(`"8e03978e-40d5-43e8-bc93-6894a57f9324"`) }, 201},
		{"sf-string with its two escapes", func() any { return v2(`"a\"b\\c"`) }, 201},
		{"bare token", func() any { return v2(`8e03978e-40d5-43e8-bc93-6894a57f9324`) }, 201},
		{"sf-string with a parameter, ignored", func() any { return v2(`"k";v=1`) }, 201},
		{"a Go escape", func() any { return v2(`"a\u0041"`) }, 400},
		{"non-ASCII", func() any { return v2(`"clé"`) }, 400},
		{"a quote inside", func() any { return v2(`"a"b"`) }, 400},
		{"no closing quote", func() any { return v2(`"ab`) }, 400},
		{"two headers joined by API Gateway", func() any { return v2(`"a", "b"`) }, 400},
		{"two bare headers joined", func() any { return v2(`a,b`) }, 400},
		{"bare with a space", func() any { return v2(`a b`) }, 400},
		{"sf-string ending in a space, which the record's id would lose", func() any { return v2(`"k "`) }, 400},
		{"two REST headers", func() any {
			return events.APIGatewayProxyRequest{HTTPMethod: "POST", Resource: "/orders", Path: "/orders", Body: "{}",
				Headers:           map[string]string{"Idempotency-Key": `"b"`},
				MultiValueHeaders: map[string][]string{"Idempotency-Key": {`"a"`, `"b"`}}}
		}, 400},
		{"one REST header, in both forms", func() any {
			return events.APIGatewayProxyRequest{HTTPMethod: "POST", Resource: "/orders", Path: "/orders", Body: "{}",
				Headers:           map[string]string{"Idempotency-Key": `"a"`},
				MultiValueHeaders: map[string][]string{"Idempotency-Key": {`"a"`}}}
		}, 201},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var got int
				switch req := tt.req().(type) {
				case events.APIGatewayV2HTTPRequest:
					c := &createOrder{}
					resp, err := idempotency.WrapHTTP(c.handle, lockcore.NewMemoryStore(), quiet())(t.Context(), req)
					if err != nil {
						t.Fatal(err)
					}
					got = resp.StatusCode
				case events.APIGatewayProxyRequest:
					resp, err := idempotency.WrapHTTP(func(context.Context, events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
						return events.APIGatewayProxyResponse{StatusCode: 201}, nil
					}, lockcore.NewMemoryStore(), quiet())(t.Context(), req)
					if err != nil {
						t.Fatal(err)
					}
					got = resp.StatusCode
				}
				if got != tt.want {
					t.Errorf("status = %d, want %d", got, tt.want)
				}
			})
		})
	}
}

// A body that is not JSON is fingerprinted as text, apart from a JSON
// body, and one that is not UTF-8 as its bytes: the text abc and the JSON
// string "abc", no body and the JSON string "", two binary bodies (which
// encoding/json would both write as U+FFFD), also two that parse as JSON
// strings of bytes that are not UTF-8, are two payloads each, and the
// second is 422, not a replay.
func TestHTTPTextBodyIsNotJSONString(t *testing.T) {
	tests := []struct {
		name          string
		first, second string
		base64        bool // sent base64-encoded, as API Gateway sends a binary body
	}{
		{"text and a JSON string", `abc`, `"abc"`, false},
		{"no body and the empty JSON string", ``, `""`, false},
		{"two binary bodies", "\xff\x01", "\xfe\x01", true},
		{"two binary bodies of JSON syntax", "\"\xff\"", "\"\xfe\"", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := &createOrder{}
				h := idempotency.WrapHTTP(c.handle, lockcore.NewMemoryStore(), quiet())
				req := func(body string) events.APIGatewayV2HTTPRequest {
					if !tt.base64 {
						return post("/orders", `"k"`, body)
					}
					r := post("/orders", `"k"`, base64.StdEncoding.EncodeToString([]byte(body)))
					r.IsBase64Encoded = true
					return r
				}
				if _, err := h(t.Context(), req(tt.first)); err != nil {
					t.Fatal(err)
				}
				resp, err := h(t.Context(), req(tt.second))
				if err != nil || resp.StatusCode != http.StatusUnprocessableEntity {
					t.Errorf("second = %d %v, %v; want 422", resp.StatusCode, resp.Headers, err)
				}
			})
		})
	}
}

// A long path is not a long key: a function URL or ALB request scoped by
// a path of 2 KiB, with a key of 255 bytes, runs once and is replayed,
// not answered 400 as if its key were too long.
func TestHTTPLongPathIsNotABadKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var runs atomic.Int32
		h := idempotency.WrapHTTP(func(context.Context, events.LambdaFunctionURLRequest) (events.LambdaFunctionURLResponse, error) {
			runs.Add(1)
			return events.LambdaFunctionURLResponse{StatusCode: http.StatusCreated}, nil
		}, lockcore.NewMemoryStore(), quiet())
		req := events.LambdaFunctionURLRequest{RawPath: "/files/" + strings.Repeat("p", 2048), Body: "{}",
			Headers: map[string]string{"idempotency-key": `"` + strings.Repeat("k", 255) + `"`}}
		req.RequestContext.HTTP.Method = http.MethodPost
		for i := range 2 {
			resp, err := h(t.Context(), req)
			if err != nil || resp.StatusCode != http.StatusCreated {
				t.Errorf("request %d = %d %q, %v; want 201", i, resp.StatusCode, resp.Body, err)
			}
		}
		if got := runs.Load(); got != 1 {
			t.Errorf("handler runs = %d, want 1", got)
		}
	})
}

// draft-ietf-httpapi-idempotency-key-header-06 §5: the lookup key
// combines the client's key with what the server knows of the client, so
// that a caller who learns another's key does not get that caller's
// response. A key is scoped by the authenticated caller (a JWT's issuer
// and subject, a Lambda authorizer's principal, a Cognito identity, an
// API key, an IAM principal), when the request carries one: the same key
// and body from another caller runs on its own; the same caller's retry
// is replayed.
func TestHTTPKeyScopedByCaller(t *testing.T) {
	var issued atomic.Int64 // every token is another one: only its issuer and subject name the caller
	jwt := func(sub string) events.APIGatewayV2HTTPRequest {
		req := post("/orders", `"k"`, `{"sku":"a"}`)
		req.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
			JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{Claims: map[string]string{
				"iss": "https://issuer.example", "sub": sub, "iat": strconv.FormatInt(issued.Add(1), 10)}}}
		return req
	}
	rest := func(principal string) events.APIGatewayProxyRequest {
		return events.APIGatewayProxyRequest{HTTPMethod: "POST", Resource: "/orders", Path: "/orders", Body: "{}",
			Headers:        map[string]string{"Idempotency-Key": `"k"`},
			RequestContext: events.APIGatewayProxyRequestContext{Authorizer: map[string]any{"principalId": principal}}}
	}
	// An IAM caller is its principal: a role without its session name,
	// which another set of credentials for the same role changes.
	const alice, aliceRetry, mallory = "arn:aws:sts::123456789012:assumed-role/alice/s-1",
		"arn:aws:sts::123456789012:assumed-role/alice/s-2", "arn:aws:sts::123456789012:assumed-role/mallory/s-1"
	restIAM := func(arn string) events.APIGatewayProxyRequest {
		req := rest("")
		req.RequestContext.Authorizer = nil
		req.RequestContext.Identity = events.APIGatewayRequestIdentity{AccountID: "123456789012", UserArn: arn}
		return req
	}
	urlIAM := func(arn string) events.LambdaFunctionURLRequest {
		req := events.LambdaFunctionURLRequest{RawPath: "/orders", Body: "{}", Headers: map[string]string{"idempotency-key": `"k"`}}
		req.RequestContext.HTTP.Method = http.MethodPost
		req.RequestContext.Authorizer = &events.LambdaFunctionURLRequestContextAuthorizerDescription{
			IAM: &events.LambdaFunctionURLRequestContextAuthorizerIAMDescription{AccountID: "123456789012", UserARN: arn}}
		return req
	}
	httpIAM := func(arn string) events.APIGatewayV2HTTPRequest {
		req := post("/orders", `"k"`, `{"sku":"a"}`)
		req.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
			IAM: &events.APIGatewayV2HTTPRequestContextAuthorizerIAMDescription{AccountID: "123456789012", UserARN: arn}}
		return req
	}
	tests := []struct {
		name     string
		run      func(t *testing.T) int32 // the handler's runs after alice, alice's retry and mallory
		wantRuns int32
	}{
		{"REST, IAM: two roles of one account", func(t *testing.T) int32 {
			var runs atomic.Int32
			h := idempotency.WrapHTTP(func(context.Context, events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
				runs.Add(1)
				return events.APIGatewayProxyResponse{StatusCode: http.StatusCreated}, nil
			}, lockcore.NewMemoryStore(), quiet())
			for _, req := range []events.APIGatewayProxyRequest{restIAM(alice), restIAM(aliceRetry), restIAM(mallory)} {
				if _, err := h(t.Context(), req); err != nil {
					t.Fatal(err)
				}
			}
			return runs.Load()
		}, 2},
		{"HTTP API, IAM: two roles of one account", func(t *testing.T) int32 {
			c := &createOrder{}
			h := idempotency.WrapHTTP(c.handle, lockcore.NewMemoryStore(), quiet())
			for _, req := range []events.APIGatewayV2HTTPRequest{httpIAM(alice), httpIAM(aliceRetry), httpIAM(mallory)} {
				if _, err := h(t.Context(), req); err != nil {
					t.Fatal(err)
				}
			}
			return c.runs.Load()
		}, 2},
		{"function URL, IAM: two roles of one account", func(t *testing.T) int32 {
			var runs atomic.Int32
			h := idempotency.WrapHTTP(func(context.Context, events.LambdaFunctionURLRequest) (events.LambdaFunctionURLResponse, error) {
				runs.Add(1)
				return events.LambdaFunctionURLResponse{StatusCode: http.StatusCreated}, nil
			}, lockcore.NewMemoryStore(), quiet())
			for _, req := range []events.LambdaFunctionURLRequest{urlIAM(alice), urlIAM(aliceRetry), urlIAM(mallory)} {
				if _, err := h(t.Context(), req); err != nil {
					t.Fatal(err)
				}
			}
			return runs.Load()
		}, 2},
		{"HTTP API, JWT authorizer", func(t *testing.T) int32 {
			c := &createOrder{}
			h := idempotency.WrapHTTP(c.handle, lockcore.NewMemoryStore(), quiet())
			for _, req := range []events.APIGatewayV2HTTPRequest{jwt("alice"), jwt("alice"), jwt("mallory")} {
				if _, err := h(t.Context(), req); err != nil {
					t.Fatal(err)
				}
			}
			return c.runs.Load()
		}, 2},
		{"REST, Lambda authorizer", func(t *testing.T) int32 {
			var runs atomic.Int32
			h := idempotency.WrapHTTP(func(context.Context, events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
				runs.Add(1)
				return events.APIGatewayProxyResponse{StatusCode: http.StatusCreated}, nil
			}, lockcore.NewMemoryStore(), quiet())
			for _, req := range []events.APIGatewayProxyRequest{rest("alice"), rest("alice"), rest("mallory")} {
				if _, err := h(t.Context(), req); err != nil {
					t.Fatal(err)
				}
			}
			return runs.Load()
		}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				if got := tt.run(t); got != tt.wantRuns {
					t.Errorf("handler runs = %d, want %d (alice once, her retry replayed, mallory on his own)", got, tt.wantRuns)
				}
			})
		})
	}
}

// API Gateway answers 504 after its integration timeout (29 s for a REST
// API by default, 30 s at most for an HTTP API), whatever the function's
// timeout: a duplicate behind it that waits longer for the first answer
// answers nobody, and keeps polling. It gets 409 within the gateway's
// time instead; a user who raised the REST timeout passes a longer
// lockcore.WithMaxWait.
func TestHTTPDuplicateWaitsWithinTheGatewayTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := &createOrder{block: make(chan struct{}), started: make(chan struct{}, 1)}
		store := lockcore.NewMemoryStore()
		h := idempotency.WrapHTTP(c.handle, store, quiet())
		var wg sync.WaitGroup
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
			defer cancel()
			_, _ = idempotency.WrapHTTP(c.handle, store, quiet())(ctx, post("/orders", `"k"`, `{}`))
		})
		<-c.started
		go func() { time.Sleep(2 * time.Minute); close(c.block) }()
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute) // the function's timeout
		defer cancel()
		start := time.Now()
		resp, err := h(ctx, post("/orders", `"k"`, `{}`))
		took := time.Since(start)
		wg.Wait()
		if err != nil || resp.StatusCode != http.StatusConflict || took > 29*time.Second {
			t.Errorf("duplicate = %d after %v, %v; want 409 within the gateway's 29 s", resp.StatusCode, took, err)
		}
	})
}

// With Keys.Optional a request without the header runs on its own, but
// a malformed header is not read as none (RFC 8941 lets a parser ignore a
// field it cannot parse; here that would run a retry a second time): it
// is 400.
func TestHTTPOptionalKeyMalformedHeader(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := &createOrder{}
		h := idempotency.WrapHTTP(c.handle, lockcore.NewMemoryStore(), quiet(), idempotency.WithKeys(idempotency.Keys{Optional: true}))
		resp, err := h(t.Context(), post("/orders", `"a", "b"`, `{}`))
		if err != nil || resp.StatusCode != http.StatusBadRequest || c.runs.Load() != 0 {
			t.Errorf("malformed header = %d, %v, %d runs; want 400 and no run", resp.StatusCode, err, c.runs.Load())
		}
	})
}

// An ALB target group with multi-value headers on sends the request's
// headers in multiValueHeaders only, and reads only the response's
// multiValueHeaders: a replay is marked there, also when the handler's
// response had no headers at all; with them off, in headers.
func TestHTTPReplayMarkedInALBHeaderForm(t *testing.T) {
	tests := []struct {
		name       string
		multiValue bool
	}{
		{"multi-value headers on", true},
		{"multi-value headers off", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var runs atomic.Int32
				h := idempotency.WrapHTTP(func(context.Context, events.ALBTargetGroupRequest) (events.ALBTargetGroupResponse, error) {
					runs.Add(1)
					return events.ALBTargetGroupResponse{StatusCode: http.StatusCreated, Body: "{}"}, nil
				}, lockcore.NewMemoryStore(), quiet())
				req := events.ALBTargetGroupRequest{HTTPMethod: http.MethodPost, Path: "/orders", Body: "{}"}
				if tt.multiValue {
					req.MultiValueHeaders = map[string][]string{"idempotency-key": {`"k"`}}
				} else {
					req.Headers = map[string]string{"idempotency-key": `"k"`}
				}
				var resp events.ALBTargetGroupResponse
				for i := range 2 {
					var err error
					if resp, err = h(t.Context(), req); err != nil || resp.StatusCode != http.StatusCreated {
						t.Fatalf("request %d = %d, %v; want 201", i, resp.StatusCode, err)
					}
				}
				got := resp.Headers["Idempotent-Replayed"]
				if tt.multiValue {
					got = strings.Join(resp.MultiValueHeaders["Idempotent-Replayed"], ",")
				}
				if got != "true" || runs.Load() != 1 {
					t.Errorf("replay: %s = %q (headers %v, multi-value headers %v), %d runs; want \"true\" in the form the target group reads, 1 run",
						"Idempotent-Replayed", got, resp.Headers, resp.MultiValueHeaders, runs.Load())
				}
			})
		})
	}
}

// Behind API Gateway, the first request of a key whose handler answers
// after 25 s, against a table whose releases never answer, is answered
// within the gateway's 29 s: the record's release (which may take a lease
// with time to spare) ends by the time the request must be answered, not
// only by the function's deadline. The store never confirmed the record,
// so the answer is 503 store_unavailable (a retry gets the key's
// answer), not the handler's 201, which another run could replace.
func TestHTTPHolderAnswersWithinTheGatewayTimeoutDespiteAHangingRelease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := &createOrder{}
		h := idempotency.WrapHTTP(func(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
			time.Sleep(25 * time.Second)
			return c.handle(ctx, req)
		}, faultstore.UnansweredReleases{Store: lockcore.NewMemoryStore()}, quiet())
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute) // the function's timeout
		defer cancel()
		start := time.Now()
		resp, err := h(ctx, post("/orders", `"k"`, `{}`))
		if took := time.Since(start); err != nil || resp.StatusCode != http.StatusServiceUnavailable || took >= 29*time.Second {
			t.Errorf("first request = %d after %v, %v; want 503 within the gateway's 29 s", resp.StatusCode, took, err)
		}
		if code := problemCode(t, resp); code != "store_unavailable" {
			t.Errorf("problem = %q, want store_unavailable", code)
		}
	})
}

// A request whose every call a table throttled, with no record of its
// key, is answered 503 (store_unavailable), not 409: nothing says that a
// request with its key is in progress.
func TestHTTPThrottledTableWithoutARecordIs503(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &throttledStore{MemoryStore: lockcore.NewMemoryStore()}
		store.shut.Store(true)
		c := &createOrder{}
		h := idempotency.WrapHTTP(c.handle, store, quiet())
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		resp, err := h(ctx, post("/orders", `"k"`, `{}`))
		if err != nil || resp.StatusCode != http.StatusServiceUnavailable || problemCode(t, resp) != "store_unavailable" {
			t.Errorf("request = %d %q, %v; want 503 store_unavailable", resp.StatusCode, resp.Body, err)
		}
		if got := c.runs.Load(); got != 0 {
			t.Errorf("handler runs = %d, want 0", got)
		}
	})
}
