package httpmw

import (
	"context"

	"github.com/aws/aws-lambda-go/events"

	"github.com/herdlock/herdlock/lockcore/storeapi"
)

// NewFunctionURL returns h wrapped in a lock on store, for a Lambda
// function URL (payload format 2.0, buffered responses):
//
//	h, err := httpmw.NewFunctionURL(getRate, store, httpmw.Query[events.LambdaFunctionURLRequest]("pair"))
//
// It is [NewREST] for the function URL's event shape, which has no path
// parameters: take the key from the query, a header or the body.
func NewFunctionURL[T any](h func(context.Context, events.LambdaFunctionURLRequest) (Response[T], error), store storeapi.Store,
	key func(context.Context, events.LambdaFunctionURLRequest) (string, error), opts ...Option,
) (func(context.Context, events.LambdaFunctionURLRequest) (events.LambdaFunctionURLResponse, error), error) {
	c, err := newCore(h, store, key, false, opts)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, req events.LambdaFunctionURLRequest) (events.LambdaFunctionURLResponse, error) {
		r, body, b64 := fitted(c.serve(ctx, req), invokeResponseLimit)
		return events.LambdaFunctionURLResponse{StatusCode: r.status, Headers: r.header, Body: body, IsBase64Encoded: b64}, nil
	}, nil
}
