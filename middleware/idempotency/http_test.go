package idempotency_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/herdlock/herdlock/lockcore"
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
	if resp.Headers["Content-Type"] != httpmw.ProblemContentType {
		return ""
	}
	var p httpmw.Problem
	if err := json.Unmarshal([]byte(resp.Body), &p); err != nil {
		t.Fatalf("problem body %q: %v", resp.Body, err)
	}
	return p.Code
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
			{post("/orders", strings.Repeat("k", idempotency.MaxKeyBytes+1), `{}`), 400, "bad_idempotency_key", false},
		}, 0},
		{"a key of 255 bytes, Stripe's longest", 0, nil, []step{
			{post("/orders", strings.Repeat("k", idempotency.MaxKeyBytes), `{}`), 201, "", false},
			{post("/orders", strings.Repeat("k", idempotency.MaxKeyBytes), `{}`), 201, "", true},
		}, 1},
		{"optional: without a key every request runs", 0, []idempotency.Option{idempotency.WithOptionalKey()}, []step{
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
		{"a 5xx answer kept: 503 with Retry-After in the window", 502, []idempotency.Option{idempotency.WithKeptErrors(time.Minute)}, []step{
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
						(resp.Headers[idempotency.HeaderReplayed] == "true") != s.wantReplay {
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
				func(r events.APIGatewayProxyResponse) bool { return r.Headers[idempotency.HeaderReplayed] == "true" })
		}},
		{"HTTP API", func(t *testing.T) ([3]int, bool, int32) {
			return shapeCase(t, func(k string) events.APIGatewayV2HTTPRequest { return post("/orders", k, "{}") },
				func() events.APIGatewayV2HTTPResponse { return events.APIGatewayV2HTTPResponse{StatusCode: 201} },
				func(r events.APIGatewayV2HTTPResponse) int { return r.StatusCode },
				func(r events.APIGatewayV2HTTPResponse) bool { return r.Headers[idempotency.HeaderReplayed] == "true" })
		}},
		{"function URL", func(t *testing.T) ([3]int, bool, int32) {
			return shapeCase(t, func(k string) events.LambdaFunctionURLRequest {
				r := events.LambdaFunctionURLRequest{RawPath: "/", Headers: hdr(k), Body: "{}"}
				r.RequestContext.HTTP.Method = "POST"
				return r
			}, func() events.LambdaFunctionURLResponse { return events.LambdaFunctionURLResponse{StatusCode: 201} },
				func(r events.LambdaFunctionURLResponse) int { return r.StatusCode },
				func(r events.LambdaFunctionURLResponse) bool { return r.Headers[idempotency.HeaderReplayed] == "true" })
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
					return r.MultiValueHeaders[idempotency.HeaderReplayed][0] == "true"
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
