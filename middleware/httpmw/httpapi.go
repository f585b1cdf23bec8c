package httpmw

import (
	"context"

	"github.com/aws/aws-lambda-go/events"

	"github.com/herdlock/herdlock/lockcore/storeapi"
)

// NewHTTPAPI returns h wrapped in a lock on store, for an API Gateway
// HTTP API with payload format 2.0:
//
//	h, err := httpmw.NewHTTPAPI(getRate, store, httpmw.PathParam[events.APIGatewayV2HTTPRequest]("pair"))
//
// It is [NewREST] for the HTTP API's event shape.
func NewHTTPAPI[T any](h func(context.Context, events.APIGatewayV2HTTPRequest) (Response[T], error), store storeapi.Store,
	key func(context.Context, events.APIGatewayV2HTTPRequest) (string, error), opts ...Option,
) (func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error), error) {
	c, err := newCore(h, store, key, true, opts)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		r, body, b64 := fitted(c.serve(ctx, req), invokeResponseLimit)
		return events.APIGatewayV2HTTPResponse{StatusCode: r.status, Headers: r.header, Body: body, IsBase64Encoded: b64}, nil
	}, nil
}
