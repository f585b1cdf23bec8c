package httpmw_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/lockcore/storeapi"
	"github.com/herdlock/herdlock/middleware/httpmw"
)

// keyRecorder is a store that records the lock ids it is asked for.
type keyRecorder struct {
	storeapi.Store
	mu  sync.Mutex
	ids []string
}

func newKeyRecorder() *keyRecorder { return &keyRecorder{Store: lockcore.NewMemoryStore()} }

func (s *keyRecorder) Acquire(ctx context.Context, req storeapi.AcquireRequest) (storeapi.Item, error) {
	s.mu.Lock()
	s.ids = append(s.ids, req.Key.ID)
	s.mu.Unlock()
	return s.Store.Acquire(ctx, req)
}

func (s *keyRecorder) asked() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.ids...)
}

// order is a request body.
type order struct {
	Pair string `json:"pair"`
}

func pairOfOrder(o order) (string, error) {
	if o.Pair == "" {
		return "", fmt.Errorf("%w: no pair", httpmw.ErrBadRequest)
	}
	return o.Pair, nil
}

// bodyAdapter is the HTTP API adapter with the key in the JSON body.
func bodyAdapter(store storeapi.Store) func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	return must(httpmw.NewHTTPAPI(func(_ context.Context, req events.APIGatewayV2HTTPRequest) (httpmw.Response[rate], error) {
		o, err := httpmw.DecodeJSON[order](req)
		if err != nil {
			return httpmw.Response[rate]{}, err
		}
		return httpmw.OK(rate{Pair: o.Pair}), nil
	}, store, httpmw.JSONBody[events.APIGatewayV2HTTPRequest](pairOfOrder), quiet()))
}

func TestMalformedRequestsAre400WithoutALock(t *testing.T) {
	wrongShape, err := os.ReadFile(filepath.Join("testdata", "alb-get-rate.json"))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		event string
		body  bool // the key is in the body
	}{
		{"wrong shape", string(wrongShape), false},
		{"empty event", `{}`, false},
		{"missing path parameter", `{"version":"2.0","rawPath":"/rates/","pathParameters":{}}`, false},
		{"blank path parameter", `{"version":"2.0","pathParameters":{"pair":"  "}}`, false},
		{"key over the limit", `{"version":"2.0","pathParameters":{"pair":"` + strings.Repeat("x", 4096) + `"}}`, false},
		{"body not JSON", `{"version":"2.0","body":"pair=EURUSD"}`, true},
		{"body of the wrong shape", `{"version":"2.0","body":"[1,2]"}`, true},
		{"two JSON values", `{"version":"2.0","body":"{\"pair\":\"A\"} {\"pair\":\"B\"}"}`, true},
		{"bad base64", `{"version":"2.0","body":"%%%","isBase64Encoded":true}`, true},
		{"no body", `{"version":"2.0"}`, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			store := newKeyRecorder()
			f := bodyAdapter(store)
			if !tc.body {
				f = must(httpmw.NewHTTPAPI(func(_ context.Context, req events.APIGatewayV2HTTPRequest) (httpmw.Response[rate], error) {
					return httpmw.OK(rate{}), nil
				}, store, httpmw.PathParam[events.APIGatewayV2HTTPRequest]("pair"), quiet()))
			}
			var req events.APIGatewayV2HTTPRequest
			if err := json.Unmarshal([]byte(tc.event), &req); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := invocation(10 * time.Second)
			defer cancel()
			resp, err := f(ctx, req)
			if err != nil || resp.StatusCode != 400 {
				t.Fatalf("answer %d %v, want 400", resp.StatusCode, err)
			}
			if ids := store.asked(); len(ids) != 0 {
				t.Errorf("locks asked for %q, want none", ids)
			}
		})
	}
}

func TestBodyKeyTakesTheLockItNames(t *testing.T) {
	store := newKeyRecorder()
	req := events.APIGatewayV2HTTPRequest{Body: `eyJwYWlyIjoiR0JQVVNEIn0=`, IsBase64Encoded: true} // {"pair":"GBPUSD"}
	req.RequestContext.HTTP.Method = "GET"
	ctx, cancel := invocation(10 * time.Second)
	defer cancel()
	resp, err := bodyAdapter(store)(ctx, req)
	if err != nil || resp.StatusCode != 200 || resp.Body != `{"pair":"GBPUSD","bid":0}` {
		t.Fatalf("answer %d %q %v", resp.StatusCode, resp.Body, err)
	}
	if ids := store.asked(); len(ids) != 1 || ids[0] != "GBPUSD" {
		t.Errorf("locks asked for %q, want [GBPUSD]", ids)
	}
}

func TestHeaderAndQueryKeys(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "rest-get-rate.json"))
	if err != nil {
		t.Fatal(err)
	}
	var req events.APIGatewayProxyRequest
	if err := json.Unmarshal(raw, &req); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for name, key := range map[string]func(context.Context, events.APIGatewayProxyRequest) (string, error){
		"header": httpmw.Header[events.APIGatewayProxyRequest]("x-herdlock-pair"),
		"query":  httpmw.Query[events.APIGatewayProxyRequest]("pair"),
		"path":   httpmw.PathParam[events.APIGatewayProxyRequest]("pair"),
	} {
		if id, err := key(ctx, req); id != samplePair || err != nil {
			t.Errorf("%s key = %q, %v; want %s", name, id, err, samplePair)
		}
	}
	alb := events.ALBTargetGroupRequest{QueryStringParameters: map[string]string{"pair": "EUR%2FUSD", "bad": "%zz"}}
	if id, err := httpmw.Query[events.ALBTargetGroupRequest]("pair")(ctx, alb); id != "EUR/USD" || err != nil {
		t.Errorf("ALB query key = %q, %v; want it URL-decoded", id, err)
	}
	if _, err := httpmw.Query[events.ALBTargetGroupRequest]("bad")(ctx, alb); err == nil {
		t.Error("ALB query key of a bad escape: no error")
	}
	if _, err := httpmw.PathParam[events.LambdaFunctionURLRequest]("pair")(ctx, events.LambdaFunctionURLRequest{}); err == nil {
		t.Error("function URL path parameter: no error")
	}
}
