package idempotency

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/lockcore/storeapi"
	"github.com/herdlock/herdlock/middleware/httpmw"
	"github.com/herdlock/herdlock/middleware/internal/answerby"
	"github.com/herdlock/herdlock/middleware/lockmw"
)

// HTTP header names of [WrapHTTP].
const (
	// headerIdempotencyKey is the request header that carries the key
	// (draft-ietf-httpapi-idempotency-key-header-06): a structured-field
	// string, "quoted", or leniently a bare value of visible ASCII without
	// quote, comma, semicolon or backslash, as Stripe's clients send it.
	// Sent once: a second one, or any other value, is 400.
	headerIdempotencyKey = "Idempotency-Key"
	// headerReplayed is set to "true" on a replayed response, as Stripe
	// names it.
	headerReplayed = "Idempotent-Replayed"
)

// HTTPResponse is the set of response event shapes [WrapHTTP] answers
// with, one for each shape of httpmw.Request.
type HTTPResponse interface {
	events.APIGatewayProxyResponse | events.APIGatewayV2HTTPResponse |
		events.LambdaFunctionURLResponse | events.ALBTargetGroupResponse
}

// WrapHTTP returns the HTTP handler h made idempotent by the
// Idempotency-Key request header, per
// draft-ietf-httpapi-idempotency-key-header-06, for API Gateway REST and
// HTTP APIs, function URLs and ALB (Req and Resp of the same one):
//
//	lambda.Start(idempotency.WrapHTTP(createOrder, store, idempotency.WithKeys(idempotency.Keys{Prefix: "orders"})))
//
// A request of a safe method (GET, HEAD, OPTIONS, TRACE) runs h as it is.
// A request of another method:
//
//   - without the header: 400, problem+json, code bad_idempotency_key;
//     with [Keys].Optional, h runs on its own, every time;
//   - with a key: the key is scoped by the method and the route (the REST
//     API's resource, the HTTP API's route key, else the path) and, as
//     the draft's security considerations recommend, by the caller that
//     the authorizer names (a JWT's issuer and subject, a REST Lambda
//     authorizer's principalId, a Cognito identity, an API key id, an
//     IAM principal: a user, or a role without its session name; not an
//     HTTP API's Lambda authorizer, whose context names no principal,
//     nor ALB), so that a caller who learns
//     another's key does not get that one's response; and the
//     fingerprint is of the path, the query (its parameters in any
//     order) and the body (canonical when it is JSON); then as [Wrap]:
//     h runs once per key and retention, a duplicate waits for its
//     answer and gets it with the header Idempotent-Replayed: true; a
//     key reused with another path, query or body is 422
//     (idempotency_key_reused), a wait that cannot finish before the
//     deadline 409 (idempotency_key_in_progress), as is a holder's
//     request whose hold ended while h ran, a key that is not
//     usable (not an sf-string nor a bare value, a header sent twice,
//     over 255 bytes) 400. Behind API Gateway a duplicate waits at
//     most 28 s, inside the gateway's integration timeout (a REST API's
//     29 s default, an HTTP API's 30 s), then answers 409; a REST API
//     whose timeout was raised gives a longer lockcore.WithMaxWait
//     through [WithLockmwOptions]. In h, [FromContext]'s Key is that scoped
//     key (up to 768 bytes), not the header's value: a side effect
//     that forwards a key to an API's own idempotency sends a hash of
//     it (Stripe takes 255 characters), not the header's value, which
//     another caller may send too.
//
// A response with a 5xx status, or one that asks for a retry (408, 425,
// 429), is a failure, not an answer: the caller gets it, and it is not
// replayed (the next duplicate runs h), unless [Retention].Errors, which
// answers the duplicates of the window 503 with a Retry-After. Any other
// response is replayed, 4xx included, as Stripe does. A store failure is 503 (store_unavailable); an answer that could not
// be stored (see the package documentation's Size), 500
// (answer_not_stored), to the holder's request too. Error answers carry
// no error text. An error h returns is returned as it is.
//
// It never panics on a bad configuration: the returned handler returns
// the error, matching lockcore.ErrConfig, on every call. It is safe for
// concurrent use.
func WrapHTTP[Req httpmw.Request, Resp HTTPResponse](h func(context.Context, Req) (Resp, error), store storeapi.Store,
	opts ...Option) func(context.Context, Req) (Resp, error) {
	f, err := newHTTP(h, store, opts)
	if err != nil {
		log := configLogger(opts)
		var once sync.Once
		return func(ctx context.Context, _ Req) (Resp, error) {
			once.Do(func() {
				log.ErrorContext(ctx, "idempotency: invalid configuration; every invocation fails", slog.Any("error", err))
			})
			var zero Resp
			return zero, err
		}
	}
	return f
}

func newHTTP[Req httpmw.Request, Resp HTTPResponse](h func(context.Context, Req) (Resp, error), store storeapi.Store,
	opts []Option) (func(context.Context, Req) (Resp, error), error) {
	var zq Req
	var zr Resp
	if !pairedShapes(zq, zr) {
		return nil, fmt.Errorf("%w: WrapHTTP: %T is not answered with %T", errConfig, zq, zr)
	}
	if h == nil {
		return nil, fmt.Errorf("%w: nil HTTP handler", errConfig)
	}
	o, err := collect(opts)
	if err != nil {
		return nil, err
	}
	if wait, ok := gatewayWait(zq); ok { // before the user's: a longer lockcore.WithMaxWait of theirs wins
		opts = append([]Option{WithLockmwOptions(lockmw.WithLockOptions(lockcore.WithMaxWait(wait)))}, opts...)
	}
	op, err := New(Handlers[Req, Resp]{
		Handle: func(ctx context.Context, req Req) (Resp, error) {
			resp, err := h(ctx, req)
			if err == nil && failureStatus(statusOf(resp)) {
				return resp, &serverError{resp: resp}
			}
			return resp, err
		},
		Key:     func(_ context.Context, req Req) (string, error) { return scopedKey(requestOf(req)) },
		Payload: func(req Req) any { return requestOf(req).payload() },
		OnReplay: func(_ context.Context, req Req, resp Resp) (Resp, error) {
			return withHeader(resp, headerReplayed, "true", requestOf(req).mvHeaders != nil), nil
		},
	}, store, opts...)
	if err != nil {
		return nil, err
	}
	optional := o.optionalKey
	return func(ctx context.Context, req Req) (Resp, error) {
		r := requestOf(req)
		if safeMethod(r.method) || (optional && r.noKey()) {
			return h(ctx, req)
		}
		if wait, ok := gatewayWait(req); ok {
			ctx = answerby.With(ctx, time.Now().Add(wait)) // the holder's release too
		}
		resp, err := op(ctx, req)
		if err == nil {
			return resp, nil
		}
		var se *serverError
		if errors.As(err, &se) {
			return se.resp.(Resp), nil
		}
		if status, code, header := problemFor(err, time.Now()); status != 0 {
			return problemResponse[Resp](status, code, header), nil
		}
		return resp, err
	}, nil
}

// gatewayWait is how long a duplicate behind API Gateway waits for the
// first answer: within the REST API's default integration timeout of
// 29 s (an HTTP API's is 30 s at most), after which the gateway answers
// 504 and the client is gone. Function URLs and ALB have none: the
// invocation's deadline bounds the wait.
func gatewayWait(req any) (time.Duration, bool) {
	switch req.(type) {
	case events.APIGatewayProxyRequest, events.APIGatewayV2HTTPRequest:
		return 28 * time.Second, true
	}
	return 0, false
}

// serverError is a failure response of the handler (see failureStatus):
// the record fails, the caller gets the response.
type serverError struct{ resp any }

func (e *serverError) Error() string {
	return fmt.Sprintf("idempotency: the handler answered %d", statusOf(e.resp))
}

// problemFor is the error answer of an error of the idempotent operation,
// or status 0 for the handler's own error.
func problemFor(err error, now time.Time) (int, string, map[string]string) {
	var hf *lockcore.HolderFailedError
	switch {
	case errors.Is(err, errKey):
		return http.StatusBadRequest, "bad_idempotency_key", nil
	case errors.Is(err, ErrPayloadMismatch):
		return http.StatusUnprocessableEntity, "idempotency_key_reused", nil
	case errors.Is(err, ErrInProgress), errors.Is(err, lockcore.ErrLeaseLost), errors.Is(err, lockcore.ErrMaxHoldReached):
		return http.StatusConflict, "idempotency_key_in_progress", nil
	case errors.As(err, &hf):
		secs := max(int64(hf.NotBefore.Sub(now).Round(time.Second)/time.Second), 1)
		return http.StatusServiceUnavailable, "failed_earlier", map[string]string{"Retry-After": strconv.FormatInt(secs, 10)}
	case errors.Is(err, lockmw.ErrNoAnswer):
		return http.StatusInternalServerError, "answer_not_stored", nil
	case errors.Is(err, lockmw.ErrLockFailed), errors.Is(err, lockcore.ErrNoTimeLeft), errors.Is(err, lockcore.ErrReleaseFailed):
		return http.StatusServiceUnavailable, "store_unavailable", nil
	}
	return 0, "", nil
}

// failureStatus reports whether a response of status is a failure, not
// the operation's answer: a 5xx, or a 4xx that asks the client to retry
// the same request (408 Request Timeout, 425 Too Early, 429 Too Many
// Requests), which a replay would answer the same for the retention.
func failureStatus(status int) bool {
	switch status {
	case http.StatusRequestTimeout, http.StatusTooEarly, http.StatusTooManyRequests:
		return true
	}
	return status >= 500
}

// safeMethod reports whether RFC 9110 §9.2.1 calls method safe: it needs
// no idempotency key.
func safeMethod(method string) bool {
	switch strings.ToUpper(method) {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
		return true
	}
	return false
}
