package httpmw

import (
	"context"

	"github.com/aws/aws-lambda-go/events"

	"github.com/herdlock/herdlock/lockcore/storeapi"
)

// NewREST returns h wrapped in a lock on store, for an API Gateway REST
// API's Lambda proxy integration:
//
//	h, err := httpmw.NewREST(getRate, store, httpmw.PathParam[events.APIGatewayProxyRequest]("pair"))
//	if err != nil {
//		log.Fatal(err) // a configuration error, at init
//	}
//	lambda.Start(h)
//
// key takes the lock id from the request; h runs in the invocation that
// holds the lock and its [Response] is published for every waiter. See
// the package documentation for how outcomes map to statuses. The
// returned handler never returns an error and is safe for concurrent use.
// A bad configuration (nil h, key or store, a bad option value, bad
// lockmw options) is an error matching lockcore.ErrConfig that names
// every problem found, and no handler.
func NewREST[T any](h func(context.Context, events.APIGatewayProxyRequest) (Response[T], error), store storeapi.Store,
	key func(context.Context, events.APIGatewayProxyRequest) (string, error), opts ...Option,
) (func(context.Context, events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error), error) {
	c, err := newCore(h, store, key, true, opts)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, req events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
		r, body, b64 := fitted(c.serve(ctx, req), invokeResponseLimit)
		return events.APIGatewayProxyResponse{StatusCode: r.status, Headers: r.header, Body: body, IsBase64Encoded: b64}, nil
	}, nil
}
