package localrun

import (
	"encoding/json"
	"fmt"

	"github.com/aws/aws-lambda-go/events"
	"github.com/herdlock/herdlock/examples/lambda-fetch-cache/fetchcache"
)

// HTTPAPIEvents returns n events of the stack's HTTP API route GET
// /rates/{pair}, in payload format 2.0 as API Gateway sends them, each with
// its own request id.
func HTTPAPIEvents(pair string, n int) [][]byte {
	ev := events.APIGatewayV2HTTPRequest{
		Version:        "2.0",
		RouteKey:       "GET /rates/{pair}",
		RawPath:        "/rates/" + pair,
		Headers:        map[string]string{"accept": "application/json", "host": "p7d3m2c8zz.execute-api.eu-west-1.amazonaws.com"},
		PathParameters: map[string]string{"pair": pair},
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			RouteKey: "GET /rates/{pair}", AccountID: "123456789012", Stage: "$default", APIID: "p7d3m2c8zz",
			DomainName: "p7d3m2c8zz.execute-api.eu-west-1.amazonaws.com",
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{
				Method: "GET", Path: "/rates/" + pair, Protocol: "HTTP/1.1", SourceIP: "198.51.100.7",
			},
		},
	}
	out := make([][]byte, n)
	for i := range out {
		ev.RequestContext.RequestID = fmt.Sprintf("req-%d", i)
		out[i], _ = json.Marshal(ev)
	}
	return out
}

// OrderEvents returns n events of the stack's HTTP API route POST /orders
// with body, in payload format 2.0, each with its own request id, and the
// header Idempotency-Key: key unless key is empty.
func OrderEvents(key, body string, n int) [][]byte {
	headers := map[string]string{"accept": "application/json", "content-type": "application/json",
		"host": "p7d3m2c8zz.execute-api.eu-west-1.amazonaws.com"}
	if key != "" {
		headers["idempotency-key"] = key
	}
	ev := events.APIGatewayV2HTTPRequest{
		Version:  "2.0",
		RouteKey: fetchcache.OrdersRouteKey,
		RawPath:  "/orders",
		Headers:  headers,
		Body:     body,
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			RouteKey: fetchcache.OrdersRouteKey, AccountID: "123456789012", Stage: "$default", APIID: "p7d3m2c8zz",
			DomainName: "p7d3m2c8zz.execute-api.eu-west-1.amazonaws.com",
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{
				Method: "POST", Path: "/orders", Protocol: "HTTP/1.1", SourceIP: "198.51.100.7",
			},
		},
	}
	out := make([][]byte, n)
	for i := range out {
		ev.RequestContext.RequestID = fmt.Sprintf("order-req-%d", i)
		out[i], _ = json.Marshal(ev)
	}
	return out
}
