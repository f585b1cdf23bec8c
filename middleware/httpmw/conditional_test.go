package httpmw_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/middleware/httpmw"
)

// conditionalRate answers a request as a handler that evaluates its
// preconditions and ranges does: 304 for If-None-Match "v1", 412 for an
// If-Match, 416 for the Range "bytes=99-", 206 for another Range, else
// the whole 200. release, when not nil, holds the first call.
func conditionalRate(release chan struct{}) func(context.Context, events.APIGatewayProxyRequest) (httpmw.Response[rate], error) {
	var once sync.Once
	return func(_ context.Context, r events.APIGatewayProxyRequest) (httpmw.Response[rate], error) {
		if release != nil {
			once.Do(func() { <-release })
		}
		switch {
		case r.Headers["If-None-Match"] == `"v1"`:
			return httpmw.Response[rate]{Status: http.StatusNotModified}, nil
		case r.Headers["If-Match"] != "":
			return httpmw.Response[rate]{Status: http.StatusPreconditionFailed}, nil
		case r.Headers["Range"] == "bytes=99-":
			return httpmw.Response[rate]{Status: http.StatusRequestedRangeNotSatisfiable}, nil
		case r.Headers["Range"] != "":
			return httpmw.Response[rate]{Status: http.StatusPartialContent, Body: rate{Pair: "EU"}}, nil
		}
		return httpmw.OK(rate{Pair: "EURUSD", Bid: 1.1}), nil
	}
}

func restGet(header map[string]string) events.APIGatewayProxyRequest {
	return events.APIGatewayProxyRequest{HTTPMethod: http.MethodGet, PathParameters: map[string]string{"pair": samplePair}, Headers: header}
}

// TestNotModifiedAndPartialAreNotShared: a 304 or a 412 is the answer to
// its own request's precondition (RFC 9110 §15.4.5, §15.5.13, §13.1), a
// 206 or a 416 to its own Range (§15.3.7, §15.5.17; RFC 9111 §3.4: a
// cache answers a request with a partial answer only for that range): a
// holder's 304, 412, 206 or 416 goes to its client only. The GET without the header field, in the fresh window or waiting
// in the same burst, gets its own 200 with the content.
func TestNotModifiedAndPartialAreNotShared(t *testing.T) {
	tests := []struct {
		name       string
		header     map[string]string
		wantHolder int
	}{
		{"If-None-Match", map[string]string{"If-None-Match": `"v1"`}, http.StatusNotModified},
		{"If-Match", map[string]string{"If-Match": `"v0"`}, http.StatusPreconditionFailed},
		{"Range", map[string]string{"Range": "bytes=0-1"}, http.StatusPartialContent},
		{"Range not satisfiable", map[string]string{"Range": "bytes=99-"}, http.StatusRequestedRangeNotSatisfiable},
	}
	for _, tt := range tests {
		t.Run(tt.name+"/fresh window", func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				serve := must(httpmw.NewREST(conditionalRate(nil), lockcore.NewMemoryStore(), httpmw.PathParam[events.APIGatewayProxyRequest]("pair"),
					quiet(), httpmw.WithFreshSuccess(time.Minute)))
				ctx, cancel := invocation(10 * time.Second)
				defer cancel()
				holder, _ := serve(ctx, restGet(tt.header))
				plain, _ := serve(ctx, restGet(nil))
				if holder.StatusCode != tt.wantHolder {
					t.Errorf("holder %d, want its own %d", holder.StatusCode, tt.wantHolder)
				}
				if plain.StatusCode != http.StatusOK || plain.Body != `{"pair":"EURUSD","bid":1.1}` {
					t.Errorf("GET without %s: %d %q, want its own 200 with the content", tt.name, plain.StatusCode, plain.Body)
				}
			})
		})
		t.Run(tt.name+"/burst", func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				release := make(chan struct{})
				serve := must(httpmw.NewREST(conditionalRate(release), lockcore.NewMemoryStore(), httpmw.PathParam[events.APIGatewayProxyRequest]("pair"), quiet()))
				ctx, cancel := invocation(10 * time.Second)
				defer cancel()
				var holder, waiter events.APIGatewayProxyResponse
				var wg sync.WaitGroup
				wg.Go(func() { holder, _ = serve(ctx, restGet(tt.header)) })
				synctest.Wait() // the holder is in its handler
				wg.Go(func() { waiter, _ = serve(ctx, restGet(nil)) })
				synctest.Wait() // the waiter waits for the lock
				close(release)
				wg.Wait()
				if holder.StatusCode != tt.wantHolder || waiter.StatusCode != http.StatusOK || waiter.Body != `{"pair":"EURUSD","bid":1.1}` {
					t.Errorf("holder %d, waiter %d %q; want %d and the waiter's own 200", holder.StatusCode, waiter.StatusCode, waiter.Body, tt.wantHolder)
				}
			})
		})
	}
}
