package httpmw_test

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/middleware/httpmw"
)

// TestKeyPanicIs500: a key function's panic never escapes the adapter,
// whatever the method (a Lambda runtime would end the process and API
// Gateway answer its own 502): the client gets 500 problem+json with the
// code "internal", and the next request is answered by its handler.
func TestKeyPanicIs500(t *testing.T) {
	for _, method := range []string{http.MethodGet, http.MethodPost} {
		t.Run(method, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var once sync.Once
				key := func(ctx context.Context, r events.APIGatewayProxyRequest) (string, error) {
					once.Do(func() { panic("index out of range [7] with length 3") })
					return r.PathParameters["pair"], nil
				}
				c := &counting{h: okHandler}
				serve := must(httpmw.NewREST(func(ctx context.Context, r events.APIGatewayProxyRequest) (httpmw.Response[rate], error) {
					return c.handle(ctx, r.PathParameters["pair"])
				}, lockcore.NewMemoryStore(), key, quiet()))
				ctx, cancel := invocation(10 * time.Second)
				defer cancel()
				req := events.APIGatewayProxyRequest{HTTPMethod: method, PathParameters: map[string]string{"pair": samplePair}}
				var first events.APIGatewayProxyResponse
				func() {
					defer func() {
						if v := recover(); v != nil {
							t.Fatalf("the key function's panic escaped the adapter: %v", v)
						}
					}()
					first, _ = serve(ctx, req)
				}()
				second, _ := serve(ctx, req)
				raw, _ := json.Marshal(first)
				g, err := decodeResponse(raw)
				if err != nil {
					t.Fatal(err)
				}
				if p := problem(t, g); first.StatusCode != 500 || p.Reason != "internal" {
					t.Errorf("first: %d code %q, want 500 %q", first.StatusCode, p.Reason, "internal")
				}
				if second.StatusCode != 200 {
					t.Errorf("second: %d %s, want 200", second.StatusCode, second.Body)
				}
				wantCalls(t, c.count(), 1)
			})
		})
	}
}
