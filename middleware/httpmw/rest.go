package httpmw

import (
	"context"

	"github.com/aws/aws-lambda-go/events"

	"github.com/herdlock/herdlock/lockcore/storeapi"
)

// WrapREST returns h wrapped in a lock on store, for an API Gateway REST
// API's Lambda proxy integration:
//
//	lambda.Start(httpmw.WrapREST(getRate, store, httpmw.PathParam[events.APIGatewayProxyRequest]("pair")))
//
// key takes the lock id from the request; h runs in the invocation that
// holds the lock and its [Response] is published for every waiter. See
// the package documentation for how outcomes map to statuses. The
// returned handler never returns an error and is safe for concurrent use.
// A bad configuration (nil h, key or store, bad lockmw options) is
// answered 500 on every request and logged once.
func WrapREST[T any](h func(context.Context, events.APIGatewayProxyRequest) (Response[T], error), store storeapi.Store,
	key func(context.Context, events.APIGatewayProxyRequest) (string, error), opts ...Option,
) func(context.Context, events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
	c := newCore(h, store, key, true, opts)
	return func(ctx context.Context, req events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
		r, body, b64 := fitted(c.serve(ctx, req), invokeResponseLimit)
		return events.APIGatewayProxyResponse{StatusCode: r.status, Headers: r.header, Body: body, IsBase64Encoded: b64}, nil
	}
}
