package fetchcache

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/herdlock/herdlock/lockcore"
)

// TestHTTPHolderFetchesUnderTheLockAfterAnUnlockedRequest: a request that
// runs without the lock (a POST) is answered by the unlocked fetch, and
// that choice is its own: the next GET, which holds the lock, is answered
// by the holder's fetch, with the lock's fence and outcome (which fills
// the cache in the cache answer mode).
func TestHTTPHolderFetchesUnderTheLockAfterAnUnlockedRequest(t *testing.T) {
	up, _ := countingUpstream(t)
	f, err := NewFronts(func(context.Context, Request) (Response, error) { return Response{}, nil }, lockcore.NewMemoryStore(),
		"rates", time.Minute, nil, up, quietOptions...)
	if err != nil {
		t.Fatal(err)
	}
	call := func(method, pair string) Response {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		ctx = lambdacontext.NewContext(ctx, &lambdacontext.LambdaContext{AwsRequestID: "req"})
		req := events.APIGatewayV2HTTPRequest{PathParameters: map[string]string{"pair": pair}}
		req.RequestContext.HTTP.Method = method
		resp, err := f.HTTPAPI(ctx, req)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("%s %s: %d %s, %v; want 200", method, pair, resp.StatusCode, resp.Body, err)
		}
		var r Response
		if err := json.Unmarshal([]byte(resp.Body), &r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	if r := call(http.MethodPost, "EUR-USD"); r.Outcome != OutcomeNone {
		t.Errorf("POST: outcome %q, want %q (no lock)", r.Outcome, OutcomeNone)
	}
	if r := call(http.MethodGet, "GBP-USD"); r.Outcome != lockcore.Acquired.String() || r.Fence == 0 {
		t.Errorf("GET after the POST: outcome %q fence %d, want the holder's %q with its fence", r.Outcome, r.Fence, lockcore.Acquired.String())
	}
}
