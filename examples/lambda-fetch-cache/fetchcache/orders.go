package fetchcache

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/herdlock/herdlock/middleware/httpmw"
)

// OrdersRouteKey is the HTTP API route that creates an order upstream,
// once per Idempotency-Key (package idempotency): a client's retry, or a
// burst of them, gets the first answer instead of a second order.
const OrdersRouteKey = "POST /orders"

// OrderRequest is the JSON body of POST /orders.
type OrderRequest struct {
	Pair   string  `json:"pair"`
	Amount float64 `json:"amount"`
}

// createOrder is the handler of POST /orders: one upstream POST /orders
// with the checked request, answered 201 with the upstream's order as it
// came. A body that is not an order is 400; the upstream's refusal or
// failure is 5xx (503 with Retry-After when it asked for one), which
// package idempotency does not keep: the client's retry with the same key
// tries again. An upstream that created the order but whose answer was
// lost (a timeout) makes that retry create another: an API with an
// idempotency key of its own should be given the client's.
func (a *app) createOrder(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	body, err := orderBody(req)
	if err != nil {
		return orderProblem(http.StatusBadRequest, "bad_order", 0), nil
	}
	order, err := a.upstream.CreateOrder(ctx, body)
	if err != nil {
		var ue *UpstreamError
		if !errors.As(err, &ue) {
			return events.APIGatewayV2HTTPResponse{}, err // the invocation's own cause: lost lock, deadline
		}
		switch ue.Code {
		case CodeTimeout:
			return orderProblem(http.StatusGatewayTimeout, ue.Code, 0), nil
		case CodeBadAnswer:
			return orderProblem(http.StatusBadGateway, ue.Code, 0), nil
		}
		return orderProblem(http.StatusServiceUnavailable, ue.Code, ue.Wait), nil
	}
	return events.APIGatewayV2HTTPResponse{
		StatusCode: http.StatusCreated,
		Headers:    map[string]string{"Content-Type": "application/json", "Cache-Control": "no-store"},
		Body:       string(order),
	}, nil
}

// orderBody decodes and checks the request's order, and encodes it again
// for the upstream (only the fields of [OrderRequest]).
func orderBody(req events.APIGatewayV2HTTPRequest) (json.RawMessage, error) {
	o, err := httpmw.DecodeJSON[OrderRequest](req)
	if err != nil {
		return nil, err
	}
	if _, err := Key(context.Background(), Request{Pair: o.Pair}); err != nil {
		return nil, err
	}
	if !(o.Amount > 0) || math.IsInf(o.Amount, 0) {
		return nil, fmt.Errorf("%w: amount must be positive", ErrBadRequest)
	}
	return json.Marshal(o)
}

// orderProblem is an error answer of POST /orders, problem+json with no
// error text, with a Retry-After when wait is positive.
func orderProblem(status int, code string, wait time.Duration) events.APIGatewayV2HTTPResponse {
	b, _ := json.Marshal(httpmw.Problem{Type: "about:blank", Title: http.StatusText(status), Status: status, Reason: code})
	h := map[string]string{"Content-Type": "application/problem+json", "Cache-Control": "no-store"}
	if wait > 0 {
		h["Retry-After"] = strconv.Itoa(int(math.Ceil(wait.Seconds())))
	}
	return events.APIGatewayV2HTTPResponse{StatusCode: status, Headers: h, Body: string(b)}
}

// CreateOrder posts body to the upstream's POST {base}/orders and returns
// the order it created (201). Errors are classified as for [Upstream.Fetch];
// it makes one request and never retries.
func (u *Upstream) CreateOrder(ctx context.Context, body json.RawMessage) (json.RawMessage, error) {
	target := u.base.JoinPath("orders").String()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("upstream: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	return u.do(ctx, req, http.StatusCreated)
}
