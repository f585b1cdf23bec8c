package httpmw_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/herdlock/herdlock/lockcore/storeapi"
	"github.com/herdlock/herdlock/middleware/httpmw"
)

// addSeeds adds the sample events and some broken ones.
func addSeeds(f *testing.F) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	if err != nil {
		f.Fatal(err)
	}
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range []string{`{}`, `null`, `[]`, `"x"`, `{"pathParameters":null}`, `{"pathParameters":{"pair":""}}`,
		`{"body":"{\"pair\":1}"}`, `{"body":"\u0000","isBase64Encoded":true}`, `{"headers":{"X-Herdlock-Pair":"a"}}`,
		`{"queryStringParameters":{"pair":"%"}}`, `{"multiValueQueryStringParameters":{"pair":[]}}`,
		`{"httpMethod":"POST","queryStringParameters":{"pair":"a"}}`, `{"httpMethod":"HEAD","queryStringParameters":{"pair":"a"}}`,
		`{"requestContext":{"http":{"method":"HEAD"}},"pathParameters":{"pair":"a"}}`} {
		f.Add([]byte(s))
	}
}

// checkAnswer fails unless the answer is a 200 for the one id the request
// named (no lock for a method that does not share answers), or a 400
// with no lock asked for.
func checkAnswer(t *testing.T, status int, store *keyRecorder, method, want string, wantErr error) {
	ids := store.asked()
	switch {
	case wantErr == nil && len(want) <= storeapi.MaxPartitionKeyBytes && method != "GET" && method != "HEAD":
		if status != 200 || len(ids) != 0 {
			t.Fatalf("%q request: status %d, locks %q; want 200 and none", method, status, ids)
		}
	case wantErr == nil && len(want) <= storeapi.MaxPartitionKeyBytes:
		if status != 200 || len(ids) != 1 || ids[0] != want {
			t.Fatalf("status %d, locks %q; want 200 and [%q]", status, ids, want)
		}
	default:
		if status != 400 || len(ids) != 0 {
			t.Fatalf("status %d, locks %q; want 400 and none", status, ids)
		}
	}
}

func FuzzHTTPAPIDecoding(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, event []byte) {
		var req events.APIGatewayV2HTTPRequest
		if json.Unmarshal(event, &req) != nil {
			return // the runtime refuses it before any handler runs
		}
		ctx, cancel := invocation(10 * time.Second)
		defer cancel()
		ok := func(context.Context, events.APIGatewayV2HTTPRequest) (httpmw.Response[rate], error) {
			return httpmw.OK(rate{}), nil
		}
		for _, key := range []func(context.Context, events.APIGatewayV2HTTPRequest) (string, error){
			httpmw.PathParam[events.APIGatewayV2HTTPRequest]("pair"),
			httpmw.Header[events.APIGatewayV2HTTPRequest]("x-herdlock-pair"),
			httpmw.JSONBody[events.APIGatewayV2HTTPRequest](pairOfOrder),
		} {
			want, wantErr := key(ctx, req)
			store := newKeyRecorder()
			resp, err := must(httpmw.NewHTTPAPI(ok, store, key, quiet()))(ctx, req)
			if err != nil {
				t.Fatalf("adapter error %v", err)
			}
			checkAnswer(t, resp.StatusCode, store, req.RequestContext.HTTP.Method, strings.TrimSpace(want), wantErr)
		}
	})
}

func FuzzALBDecoding(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, event []byte) {
		var req events.ALBTargetGroupRequest
		if json.Unmarshal(event, &req) != nil {
			return
		}
		ctx, cancel := invocation(10 * time.Second)
		defer cancel()
		ok := func(context.Context, events.ALBTargetGroupRequest) (httpmw.Response[rate], error) {
			return httpmw.OK(rate{}), nil
		}
		key := httpmw.Query[events.ALBTargetGroupRequest]("pair")
		want, wantErr := key(ctx, req)
		store := newKeyRecorder()
		resp, err := must(httpmw.NewALB(ok, store, key, quiet()))(ctx, req)
		if err != nil {
			t.Fatalf("adapter error %v", err)
		}
		if len(req.MultiValueHeaders) > 0 && resp.Headers != nil {
			t.Fatalf("multi-value request answered with single-value headers")
		}
		checkAnswer(t, resp.StatusCode, store, req.HTTPMethod, strings.TrimSpace(want), wantErr)
	})
}
