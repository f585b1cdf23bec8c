package httpmw_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/lockcore/storeapi"
	"github.com/herdlock/herdlock/middleware/httpmw"
	"github.com/herdlock/herdlock/middleware/lockmw"
)

const (
	testARN    = "arn:aws:lambda:eu-west-1:123456789012:function:rates"
	samplePair = "EURUSD"
)

// rate is the test handlers' answer body.
type rate struct {
	Pair string  `json:"pair"`
	Bid  float64 `json:"bid"`
}

// handler is a shape-independent test handler: it gets the pair the key
// function took, and the request's method with methodOf(ctx).
type handler func(ctx context.Context, pair string) (httpmw.Response[rate], error)

type methodKey struct{}

// methodOf is the method of the request whose handler got ctx.
func methodOf(ctx context.Context) string { s, _ := ctx.Value(methodKey{}).(string); return s }

// got is an adapter's response, whatever its shape.
type got struct {
	Status int
	Header map[string]string // from headers or multiValueHeaders, keys lower case
	Multi  bool              // the headers came as multiValueHeaders
	Body   []byte
	Desc   string // ALB's statusDescription
	Base64 bool   // isBase64Encoded
	Raw    map[string]json.RawMessage
}

func (g got) header(name string) string { return g.Header[strings.ToLower(name)] }

// shape is one front door: its sample event and its adapter.
type shape struct {
	name string
	file string
	// wrap builds the adapter around h and returns a function that decodes
	// an event and answers it, re-encoded to JSON as Lambda would.
	wrap func(h handler, store storeapi.Store, opts ...httpmw.Option) func(ctx context.Context, event []byte) (got, error)
}

var shapes = []shape{
	{"REST", "rest-get-rate.json", wrapShape(httpmw.NewREST[rate], httpmw.PathParam[events.APIGatewayProxyRequest]("pair"),
		func(r events.APIGatewayProxyRequest) (string, string) { return r.PathParameters["pair"], r.HTTPMethod })},
	{"HTTPAPI", "httpapi-get-rate.json", wrapShape(httpmw.NewHTTPAPI[rate], httpmw.PathParam[events.APIGatewayV2HTTPRequest]("pair"),
		func(r events.APIGatewayV2HTTPRequest) (string, string) {
			return r.PathParameters["pair"], r.RequestContext.HTTP.Method
		})},
	{"FunctionURL", "funcurl-get-rate.json", wrapShape(httpmw.NewFunctionURL[rate], httpmw.Query[events.LambdaFunctionURLRequest]("pair"),
		func(r events.LambdaFunctionURLRequest) (string, string) {
			return r.QueryStringParameters["pair"], r.RequestContext.HTTP.Method
		})},
	{"ALB", "alb-get-rate.json", wrapShape(httpmw.NewALB[rate], httpmw.Query[events.ALBTargetGroupRequest]("pair"),
		func(r events.ALBTargetGroupRequest) (string, string) {
			return r.QueryStringParameters["pair"], r.HTTPMethod
		})},
	{"ALBMultiValue", "alb-multivalue-get-rate.json", wrapShape(httpmw.NewALB[rate], httpmw.Query[events.ALBTargetGroupRequest]("pair"),
		func(r events.ALBTargetGroupRequest) (string, string) {
			return r.MultiValueQueryStringParameters["pair"][0], r.HTTPMethod
		})},
}

// wrapShape returns a shape's wrap function from its adapter, key function
// and a reader of the pair and the method for the handler.
func wrapShape[Req, Resp any](
	adapter func(func(context.Context, Req) (httpmw.Response[rate], error), storeapi.Store, func(context.Context, Req) (string, error), ...httpmw.Option) (func(context.Context, Req) (Resp, error), error),
	key func(context.Context, Req) (string, error), pairOf func(Req) (string, string),
) func(h handler, store storeapi.Store, opts ...httpmw.Option) func(ctx context.Context, event []byte) (got, error) {
	return func(h handler, store storeapi.Store, opts ...httpmw.Option) func(ctx context.Context, event []byte) (got, error) {
		f, buildErr := adapter(func(ctx context.Context, req Req) (httpmw.Response[rate], error) {
			pair, method := pairOf(req)
			return h(context.WithValue(ctx, methodKey{}, method), pair)
		}, store, key, opts...)
		return func(ctx context.Context, event []byte) (got, error) {
			if buildErr != nil {
				return got{}, buildErr
			}
			var req Req
			if err := json.Unmarshal(event, &req); err != nil {
				return got{}, err
			}
			resp, err := f(ctx, req)
			if err != nil {
				return got{}, err
			}
			raw, err := json.Marshal(resp)
			if err != nil {
				return got{}, err
			}
			return decodeResponse(raw)
		}
	}
}

// must is the handler of an adapter's constructor, which the test's
// configuration never fails.
func must[F any](f F, err error) F {
	if err != nil {
		panic(err)
	}
	return f
}

// decodeResponse reads a response as API Gateway or the ALB would.
func decodeResponse(raw []byte) (got, error) {
	var r struct {
		StatusCode        int                 `json:"statusCode"`
		StatusDescription string              `json:"statusDescription"`
		Headers           map[string]string   `json:"headers"`
		MultiValueHeaders map[string][]string `json:"multiValueHeaders"`
		Body              string              `json:"body"`
		IsBase64Encoded   bool                `json:"isBase64Encoded"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return got{}, err
	}
	g := got{Status: r.StatusCode, Header: map[string]string{}, Desc: r.StatusDescription, Body: []byte(r.Body), Base64: r.IsBase64Encoded}
	if err := json.Unmarshal(raw, &g.Raw); err != nil {
		return got{}, err
	}
	for k, v := range r.Headers {
		g.Header[strings.ToLower(k)] = v
	}
	for k, vs := range r.MultiValueHeaders {
		g.Multi = true
		g.Header[strings.ToLower(k)] = strings.Join(vs, ",")
	}
	if r.IsBase64Encoded {
		b, err := base64.StdEncoding.DecodeString(r.Body)
		if err != nil {
			return got{}, err
		}
		g.Body = b
	}
	return g, nil
}

// withMethod returns event with its method set to method: httpMethod in
// payload format 1.0 and ALB events, requestContext.http.method in 2.0.
func withMethod(t testing.TB, event []byte, method string) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(event, &m); err != nil {
		t.Fatal(err)
	}
	if _, ok := m["httpMethod"]; ok {
		m["httpMethod"] = method
	} else {
		m["requestContext"].(map[string]any)["http"].(map[string]any)["method"] = method
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sample returns the shape's sample event with the pair replaced by pair.
func sample(t testing.TB, s shape, pair string) []byte {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", s.file))
	if err != nil {
		t.Fatal(err)
	}
	pj, _ := json.Marshal(pair)
	return []byte(strings.ReplaceAll(string(raw), `"`+samplePair+`"`, string(pj)))
}

// invocation is a context as the Lambda runtime builds it.
func invocation(timeout time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	return lambdacontext.NewContext(ctx, &lambdacontext.LambdaContext{AwsRequestID: "req", InvokedFunctionArn: testARN}), cancel
}

// quiet are the options of every test adapter: no log, no metrics.
func quiet(lockOpts ...lockcore.Option) httpmw.Option {
	return httpmw.WithLockmwOptions(lockmw.WithLockGroup("rates"), lockmw.WithTelemetry(lockmw.Telemetry{Logger: slog.New(slog.DiscardHandler)}),
		lockmw.WithTelemetry(lockmw.Telemetry{EMFWriter: io.Discard}), lockmw.WithLockOptions(lockOpts...))
}

// counting wraps a handler and counts its calls.
type counting struct {
	mu    sync.Mutex
	calls int
	h     handler
}

func (c *counting) handle(ctx context.Context, pair string) (httpmw.Response[rate], error) {
	c.mu.Lock()
	c.calls++
	c.mu.Unlock()
	return c.h(ctx, pair)
}

func (c *counting) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls
}

// hintedError is an upstream failure with lockmw's retry hints.
type hintedError struct {
	code string
	wait time.Duration
}

func (e *hintedError) Error() string {
	return "upstream https://rates.example/v1/EURUSD?token=s3cr3t answered: {\"secret\":\"body\"}"
}
func (e *hintedError) FailureReason() string     { return e.code }
func (e *hintedError) RetryAfter() time.Duration { return e.wait }

// problem decodes an error answer's body.
func problem(t *testing.T, g got) httpmw.Problem {
	t.Helper()
	if ct := g.header("Content-Type"); ct != "application/problem+json" {
		t.Errorf("Content-Type = %q, want %q", ct, "application/problem+json")
	}
	var p httpmw.Problem
	if err := json.Unmarshal(g.Body, &p); err != nil {
		t.Fatalf("problem body %q: %v", g.Body, err)
	}
	if p.Status != g.Status || p.Type != "about:blank" || p.Title == "" {
		t.Errorf("problem %+v does not match status %d", p, g.Status)
	}
	for _, leak := range []string{"s3cr3t", "rates.example", "secret", "goroutine", ".go:"} {
		if strings.Contains(string(g.Body), leak) {
			t.Errorf("problem body %q carries %q", g.Body, leak)
		}
	}
	return p
}
