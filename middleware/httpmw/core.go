package httpmw

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/herdlock/herdlock/lockcore/storeapi"
	"github.com/herdlock/herdlock/middleware/internal/answer"
	"github.com/herdlock/herdlock/middleware/internal/answerby"
	"github.com/herdlock/herdlock/middleware/lockmw"
)

// reply is the core's answer, which each adapter turns into its event
// shape's response.
type reply struct {
	status int
	header map[string]string
	body   []byte
}

// core is the shape-independent part of every adapter: the lock around
// the handler, and the mapping of outcomes to replies.
type core[Req Request, T any] struct {
	o      options
	h      func(context.Context, Req) (Response[T], error)
	key    func(context.Context, Req) (string, error) // checked: errors match lockmw.ErrBadInput
	invoke func(context.Context, Req) (answer.Answer, error)
	// own answers a request that no other request's answer may answer
	// (see methods.go): the seam where an idempotency layer takes the
	// requests that carry an idempotency key.
	own func(context.Context, Req) reply
	now func() time.Time
	// answerWithin, when not zero, is how long after it arrives a request
	// must be answered (behind API Gateway: before its integration
	// timeout); the holder's release ends by then too.
	answerWithin time.Duration
}

// newCore wraps h with lockmw, the answers published inline in the fronts'
// shared format. gateway is true for the API Gateway adapters, whose
// integration timeout bounds the waits. Its error matches
// lockcore.ErrConfig.
func newCore[Req Request, T any](h func(context.Context, Req) (Response[T], error), store storeapi.Store,
	key func(context.Context, Req) (string, error), gateway bool, opts []Option) (*core[Req, T], error) {
	o, err := buildOptions(opts)
	if err != nil {
		return nil, err
	}
	c := &core[Req, T]{o: o, h: h, key: checkedKey(key), now: time.Now}
	if gateway && o.integration > 0 {
		c.answerWithin = o.integration - min(waitMargin, o.integration/2)
	}
	c.own = c.runOwn
	hs := lockmw.Handlers[Req, answer.Answer]{Fetch: c.fetch(), Codec: answer.Codec{}}
	invoke, err := lockmw.NewHandlers(hs, store, c.key, c.o.lockmwOptions(gateway)...)
	if err != nil {
		return nil, configError(err)
	}
	c.invoke = invoke
	return c, nil
}

// serve answers one request: a GET or HEAD through the lock, any other
// method on its own; a HEAD's answer without its body; Vary naming the
// header fields the key was taken from; no-store for a GET with content.
func (c *core[Req, T]) serve(ctx context.Context, req Req) reply {
	v := viewOf(req)
	method := v.method
	ctx, vary := withVary(ctx)
	r := c.answerFor(ctx, req, method)
	if names := vary.header(); names != "" {
		r.header["Vary"] = names // the key, and so the answer, depends on these fields
	}
	if sharesAnswers(method) && v.body != "" {
		// The answer may depend on the content, which no cache keys a GET
		// on (RFC 9111 §4.1; RFC 9110 §9.3.1).
		r.header["Cache-Control"] = "no-store"
	}
	if method == http.MethodHead {
		r.body = nil // RFC 9110 §9.3.2: the header fields of the GET, no content
	}
	return r
}

func (c *core[Req, T]) answerFor(ctx context.Context, req Req, method string) reply {
	if !sharesAnswers(method) {
		return c.own(ctx, req)
	}
	if c.answerWithin > 0 {
		ctx = answerby.With(ctx, time.Now().Add(c.answerWithin))
	}
	a, err := c.invoke(ctx, req)
	if err != nil {
		return c.failure(err)
	}
	if a.Method != http.MethodGet || !a.HasHTTP() {
		// A success published by a front without a GET's answer (a queue
		// refresher on the same lock group): the work is done; this
		// request's handler makes its answer.
		return c.runOwn(ctx, req)
	}
	return c.success(a)
}

// fetch runs h while holding the lock and makes the answer it publishes.
// A bad request is not an attempt (lockmw.ErrBadInput), a 5xx or 429
// answer is a failure, not shared: the holder's client gets it, the key's other
// requests the failure; an answer to the request's own preconditions or
// range is its client's only, and frees the lock as a bad request does.
func (c *core[Req, T]) fetch() func(context.Context, Req) (answer.Answer, error) {
	if c.h == nil {
		return nil // lockmw reports the missing handler as a configuration error
	}
	return func(ctx context.Context, req Req) (answer.Answer, error) {
		resp, err := c.h(ctx, req)
		if err != nil {
			if errors.Is(err, ErrBadRequest) {
				return answer.Answer{}, fmt.Errorf("%w: %w", lockmw.ErrBadInput, err)
			}
			return answer.Answer{}, err
		}
		a, err := c.answerOf(resp)
		if err != nil {
			return answer.Answer{}, err
		}
		if a.Status >= 500 || a.Status == http.StatusTooManyRequests {
			return answer.Answer{}, &statusError{a: a}
		}
		if ownRequestOnly(a.Status) {
			return answer.Answer{}, &unsharedError{a: a}
		}
		return a, nil
	}
}

// answerOf is the answer of a handler's Response.
func (c *core[Req, T]) answerOf(resp Response[T]) (answer.Answer, error) {
	status := resp.Status
	if status == 0 {
		status = http.StatusOK
	}
	if status < 200 || status > 599 {
		return answer.Answer{}, &encodeError{code: "bad_status", msg: "status " + strconv.Itoa(status)}
	}
	body, err := c.o.codec.Encode(resp.Body)
	if err != nil {
		return answer.Answer{}, &encodeError{code: "body_encoding", msg: "encoding the body failed"}
	}
	return answer.Answer{Method: http.MethodGet, Status: status, ContentType: c.o.codec.ContentType(), Body: body, At: c.now()}, nil
}

// success is the reply of a published answer, with Cache-Control when the
// answer is a 200 within the freshness window.
func (c *core[Req, T]) success(a answer.Answer) reply {
	r := plainReply(a)
	if c.o.fresh > 0 && a.Status == http.StatusOK {
		// Ages are whole seconds in HTTP (RFC 9111, 5.1).
		age := max(c.now().Sub(a.At), 0).Truncate(time.Second)
		if left := (c.o.fresh - age) / time.Second; left >= 1 {
			r.header["Cache-Control"] = "max-age=" + strconv.FormatInt(int64(left), 10)
		}
	}
	return r
}

// plainReply is the reply of an answer: its status, media type and body;
// a 204, 205 or 304 has neither body nor media type (RFC 9110 §15.3.5,
// §15.3.6, §15.4.5).
func plainReply(a answer.Answer) reply {
	if a.Status == http.StatusNoContent || a.Status == http.StatusResetContent || a.Status == http.StatusNotModified {
		return reply{status: a.Status, header: map[string]string{}}
	}
	return reply{status: a.Status, header: map[string]string{"Content-Type": a.ContentType}, body: a.Body}
}

// checkedKey is key, refusing ids that no partition key can hold; its
// errors of a client's request match lockmw.ErrBadInput.
func checkedKey[Req any](key func(context.Context, Req) (string, error)) func(context.Context, Req) (string, error) {
	if key == nil {
		return nil // lockmw reports the missing key function
	}
	return func(ctx context.Context, req Req) (string, error) {
		id, err := key(ctx, req)
		if err != nil {
			if errors.Is(err, ErrBadRequest) {
				return "", fmt.Errorf("%w: %w", lockmw.ErrBadInput, err)
			}
			return "", err
		}
		if len(id) > storeapi.MaxPartitionKeyBytes {
			return "", fmt.Errorf("%w: %w: %d bytes, at most %d", lockmw.ErrBadInput, errKeyTooLong, len(id), storeapi.MaxPartitionKeyBytes)
		}
		return id, nil
	}
}

// encodeError is the holder's error when its answer cannot be encoded.
type encodeError struct{ code, msg string }

func (e *encodeError) Error() string         { return "httpmw: " + e.msg }
func (e *encodeError) FailureReason() string { return e.code }

// ownRequestOnly reports whether status answers the request's own
// preconditions or Range, so that no request without them may get it:
// 304 and 412 (RFC 9110 §15.4.5, §15.5.13), 206 and 416 (§15.3.7,
// §15.5.17; RFC 9111 §3.4).
func ownRequestOnly(status int) bool {
	switch status {
	case http.StatusNotModified, http.StatusPreconditionFailed, http.StatusPartialContent, http.StatusRequestedRangeNotSatisfiable:
		return true
	}
	return false
}

// unsharedError is the holder's error when its handler's answer is its
// request's own (see ownRequestOnly): the answer goes to the holder's
// client, and the lock is freed without an attempt counted or a failure
// published (lockmw.ErrBadInput), so that a waiter runs its own handler.
type unsharedError struct{ a answer.Answer }

func (e *unsharedError) Error() string {
	return "httpmw: the handler answered " + strconv.Itoa(e.a.Status) + " to the request's own preconditions or range; not shared"
}
func (e *unsharedError) Unwrap() error { return lockmw.ErrBadInput }

// statusError is the holder's error when its handler answered a 5xx or a
// 429, which no cache may store (RFC 6585 §4): the answer goes to the
// holder's client, and the lock is released as failure with the reason
// "status_" and the status, or "too_many_requests" for a 429, a throttle
// (see isThrottleReason) that the waiters answer 429.
type statusError struct{ a answer.Answer }

func (e *statusError) Error() string {
	return "httpmw: the handler answered " + strconv.Itoa(e.a.Status)
}
func (e *statusError) FailureReason() string {
	if e.a.Status == http.StatusTooManyRequests {
		return "too_many_requests"
	}
	return "status_" + strconv.Itoa(e.a.Status)
}
