package httpmw

import (
	"context"
	"net/http"
	"strconv"

	"github.com/aws/aws-lambda-go/events"

	"github.com/herdlock/herdlock/lockcore/storeapi"
)

// NewALB returns h wrapped in a lock on store, for an Application Load
// Balancer target group with a Lambda target:
//
//	h, err := httpmw.NewALB(getRate, store, httpmw.Query[events.ALBTargetGroupRequest]("pair"))
//
// It is [NewREST] for the ALB's event shape, which has no path
// parameters. When the target group has multi-value headers enabled (the
// request carries multiValueHeaders), the response sets
// multiValueHeaders, as the ALB then requires, else headers; the status
// description is the status and its reason phrase, as in "200 OK".
func NewALB[T any](h func(context.Context, events.ALBTargetGroupRequest) (Response[T], error), store storeapi.Store,
	key func(context.Context, events.ALBTargetGroupRequest) (string, error), opts ...Option,
) (func(context.Context, events.ALBTargetGroupRequest) (events.ALBTargetGroupResponse, error), error) {
	c, err := newCore(h, store, key, false, opts)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, req events.ALBTargetGroupRequest) (events.ALBTargetGroupResponse, error) {
		r, body, b64 := fitted(c.serve(ctx, req), albResponseLimit)
		resp := events.ALBTargetGroupResponse{
			StatusCode:        r.status,
			StatusDescription: strconv.Itoa(r.status) + " " + http.StatusText(r.status),
			Body:              body,
			IsBase64Encoded:   b64,
		}
		if len(req.MultiValueHeaders) > 0 {
			resp.MultiValueHeaders = make(map[string][]string, len(r.header))
			for k, v := range r.header {
				resp.MultiValueHeaders[k] = []string{v}
			}
		} else {
			resp.Headers = r.header
		}
		return resp, nil
	}, nil
}
