package httpmw_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/middleware/httpmw"
	"github.com/herdlock/herdlock/middleware/lockmw"
)

// An HTTP API route GET /rates/{pair}: one upstream call per burst of
// requests for a pair, every client answered with the same 200, and a
// throttled upstream answered 429 with Retry-After to the whole burst.
func ExampleWrapHTTPAPI() {
	getRate := func(ctx context.Context, req events.APIGatewayV2HTTPRequest) (httpmw.Response[rate], error) {
		// Call the upstream here. Give its error lockmw's retry hints
		// (RetryAfter, FailureReason) to have the burst answered 429.
		return httpmw.OK(rate{Pair: req.PathParameters["pair"], Bid: 1.0842}), nil
	}
	h := httpmw.WrapHTTPAPI(getRate, lockcore.NewMemoryStore(), httpmw.PathParam[events.APIGatewayV2HTTPRequest]("pair"),
		httpmw.WithFreshness(30*time.Second),
		httpmw.WithLockmw(lockmw.WithLockGroup("rates"), lockmw.WithHolder(lockmw.Holder{AccountID: 123456789012, AppID: 1}), lockmw.WithTelemetry(lockmw.Telemetry{EMFWriter: io.Discard}),
			lockmw.WithTelemetry(lockmw.Telemetry{Logger: slog.New(slog.DiscardHandler)})))
	// In a Lambda function: lambda.Start(h).

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	get := events.APIGatewayV2HTTPRequestContext{HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: "GET"}}
	resp, _ := h(ctx, events.APIGatewayV2HTTPRequest{RequestContext: get, PathParameters: map[string]string{"pair": "EURUSD"}})
	fmt.Println(resp.StatusCode, resp.Headers["Content-Type"], resp.Headers["Cache-Control"], resp.Body)
	resp, _ = h(ctx, events.APIGatewayV2HTTPRequest{RequestContext: get})
	fmt.Println(resp.StatusCode, resp.Headers["Content-Type"], resp.Body)
	// Output:
	// 200 application/json max-age=30 {"pair":"EURUSD","bid":1.0842}
	// 400 application/problem+json {"type":"about:blank","title":"Bad Request","status":400,"code":"bad_request"}
}
