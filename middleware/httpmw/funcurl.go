package httpmw

import (
	"context"

	"github.com/aws/aws-lambda-go/events"

	"github.com/herdlock/herdlock/lockcore/storeapi"
)

// WrapFunctionURL returns h wrapped in a lock on store, for a Lambda
// function URL (payload format 2.0, buffered responses):
//
//	lambda.Start(httpmw.WrapFunctionURL(getRate, store, httpmw.Query[events.LambdaFunctionURLRequest]("pair")))
//
// It is [WrapREST] for the function URL's event shape, which has no path
// parameters: take the key from the query, a header or the body.
func WrapFunctionURL[T any](h func(context.Context, events.LambdaFunctionURLRequest) (Response[T], error), store storeapi.Store,
	key func(context.Context, events.LambdaFunctionURLRequest) (string, error), opts ...Option,
) func(context.Context, events.LambdaFunctionURLRequest) (events.LambdaFunctionURLResponse, error) {
	c := newCore(h, store, key, false, opts)
	return func(ctx context.Context, req events.LambdaFunctionURLRequest) (events.LambdaFunctionURLResponse, error) {
		r, body, b64 := fitted(c.serve(ctx, req), invokeResponseLimit)
		return events.LambdaFunctionURLResponse{StatusCode: r.status, Headers: r.header, Body: body, IsBase64Encoded: b64}, nil
	}
}
