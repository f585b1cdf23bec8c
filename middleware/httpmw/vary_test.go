package httpmw_test

import (
	"context"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/middleware/httpmw"
)

// TestHeaderKeyAnswersVary: with the key taken from a header field, the
// answer depends on that field and not only on the target URI: every
// answer names it in Vary (RFC 9110 §12.5.5), so that a cache in front
// (CloudFront, an API Gateway stage cache) does not serve the 200 with
// max-age of one key to a request for another (RFC 9111 §4.1). A key from
// the path needs no Vary.
func TestHeaderKeyAnswersVary(t *testing.T) {
	tests := []struct {
		name     string
		key      func(context.Context, events.APIGatewayProxyRequest) (string, error)
		wantVary string
	}{
		{"header", httpmw.Header[events.APIGatewayProxyRequest]("x-pair"), "X-Pair"},
		{"path", httpmw.PathParam[events.APIGatewayProxyRequest]("pair"), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := func(_ context.Context, r events.APIGatewayProxyRequest) (httpmw.Response[rate], error) {
					return httpmw.OK(rate{Pair: r.Headers["X-Pair"], Bid: 1.1}), nil
				}
				serve := must(httpmw.NewREST(h, lockcore.NewMemoryStore(), tt.key, quiet(), httpmw.WithFreshSuccess(time.Minute)))
				ctx, cancel := invocation(10 * time.Second)
				defer cancel()
				req := events.APIGatewayProxyRequest{HTTPMethod: http.MethodGet, PathParameters: map[string]string{"pair": samplePair},
					Headers: map[string]string{"X-Pair": samplePair}}
				for i, method := range []string{http.MethodGet, http.MethodGet, http.MethodHead} { // the holder, a fresh answer, a HEAD
					req.HTTPMethod = method
					resp, _ := serve(ctx, req)
					if resp.StatusCode != 200 || resp.Headers["Vary"] != tt.wantVary || resp.Headers["Cache-Control"] == "" {
						t.Errorf("answer %d (%s): %d Vary %q Cache-Control %q, want 200 Vary %q with max-age", i, method, resp.StatusCode,
							resp.Headers["Vary"], resp.Headers["Cache-Control"], tt.wantVary)
					}
				}
			})
		})
	}
}

// TestBodyKeyAnswersNoStore: a GET whose key is in its content (a
// function URL's {"pair": ...} body) has an answer that depends on what no
// cache keys on: a cache keys a GET's answer by the target URI (RFC 9111
// §4.1; RFC 9110 §9.3.1 gives a GET's content no semantics), so two
// requests for different pairs to one URI would get one answer. Its
// answers say Cache-Control: no-store instead of max-age; the same GET
// without content, keyed by its query, keeps max-age.
func TestBodyKeyAnswersNoStore(t *testing.T) {
	tests := []struct {
		name             string
		query            map[string]string
		body             string
		wantCacheControl string
	}{
		{"key in the body", nil, `{"pair":"GBPUSD"}`, "no-store"},
		{"key in the query", map[string]string{"pair": "GBPUSD"}, "", "max-age=60"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				key := func(ctx context.Context, r events.LambdaFunctionURLRequest) (string, error) {
					if id, err := httpmw.Query[events.LambdaFunctionURLRequest]("pair")(ctx, r); err == nil {
						return id, nil
					}
					return httpmw.JSONBody[events.LambdaFunctionURLRequest](pairOfOrder)(ctx, r)
				}
				h := func(context.Context, events.LambdaFunctionURLRequest) (httpmw.Response[rate], error) {
					return httpmw.OK(rate{Pair: "GBPUSD", Bid: 1.2}), nil
				}
				serve := must(httpmw.NewFunctionURL(h, lockcore.NewMemoryStore(), key, quiet(), httpmw.WithFreshSuccess(time.Minute)))
				ctx, cancel := invocation(10 * time.Second)
				defer cancel()
				req := events.LambdaFunctionURLRequest{QueryStringParameters: tt.query, Body: tt.body}
				req.RequestContext.HTTP.Method = http.MethodGet
				for i := range 2 { // the holder, a fresh answer
					resp, _ := serve(ctx, req)
					if resp.StatusCode != 200 || resp.Headers["Cache-Control"] != tt.wantCacheControl {
						t.Errorf("answer %d: %d Cache-Control %q, want 200 %q", i, resp.StatusCode, resp.Headers["Cache-Control"], tt.wantCacheControl)
					}
				}
			})
		})
	}
}
