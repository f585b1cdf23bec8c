package httpmw

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/herdlock/herdlock/lockcore"
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
type core[Req, T any] struct {
	o      options
	invoke func(context.Context, Req) (answer, error)
	now    func() time.Time
}

// newCore wraps h with lockmw, the answers published inline.
func newCore[Req, T any](h func(context.Context, Req) (Response[T], error), store lockcore.Store,
	key func(context.Context, Req) (string, error), opts []Option) *core[Req, T] {
	c := &core[Req, T]{o: buildOptions(opts), now: time.Now}
	c.invoke = lockmw.WrapHandlers(lockmw.Handlers[Req, answer]{
		Fetch: c.fetch(h),
		Codec: answerCodec{},
	}, store, checkedKey(key), c.o.lockmwOptions()...)
	return c
}

// fetch runs h while holding the lock and encodes its answer.
func (c *core[Req, T]) fetch(h func(context.Context, Req) (Response[T], error)) func(context.Context, Req) (answer, error) {
	if h == nil {
		return nil // lockmw reports the missing handler as a configuration error
	}
	return func(ctx context.Context, req Req) (answer, error) {
		resp, err := h(ctx, req)
		if err != nil {
			return answer{}, err
		}
		status := resp.Status
		if status == 0 {
			status = http.StatusOK
		}
		if status < 200 || status > 599 {
			return answer{}, &encodeError{code: "bad_status", msg: "status " + strconv.Itoa(status)}
		}
		body, err := c.o.codec.Encode(resp.Body)
		if err != nil {
			return answer{}, &encodeError{code: "body_encoding", msg: "encoding the body failed"}
		}
		return answer{status: status, contentType: c.o.codec.ContentType(), body: body, at: c.now()}, nil
	}
}

// serve answers one request.
func (c *core[Req, T]) serve(ctx context.Context, req Req) reply {
	a, err := c.invoke(ctx, req)
	if err != nil {
		return c.failure(err)
	}
	return c.success(a)
}

// success is the reply of a published answer, with Cache-Control when the
// answer is a 200 within the freshness window.
func (c *core[Req, T]) success(a answer) reply {
	h := map[string]string{"Content-Type": a.contentType}
	if c.o.fresh > 0 && a.status == http.StatusOK {
		// Ages are whole seconds in HTTP (RFC 9111, 5.1).
		age := max(c.now().Sub(a.at), 0).Truncate(time.Second)
		if left := (c.o.fresh - age) / time.Second; left >= 1 {
			h["Cache-Control"] = "max-age=" + strconv.FormatInt(int64(left), 10)
		}
	}
	return reply{status: a.status, header: h, body: a.body}
}

// checkedKey is key, refusing ids that no partition key can hold.
func checkedKey[Req any](key func(context.Context, Req) (string, error)) func(context.Context, Req) (string, error) {
	if key == nil {
		return nil // lockmw reports the missing key function
	}
	return func(ctx context.Context, req Req) (string, error) {
		id, err := key(ctx, req)
		if err != nil {
			return "", err
		}
		if len(id) > lockcore.MaxPartitionKeyBytes {
			return "", fmt.Errorf("%w: %d bytes, at most %d", ErrKeyTooLong, len(id), lockcore.MaxPartitionKeyBytes)
		}
		return id, nil
	}
}

// encodeError is the holder's error when its answer cannot be encoded.
type encodeError struct{ code, msg string }

func (e *encodeError) Error() string       { return "httpmw: " + e.msg }
func (e *encodeError) FailureCode() string { return e.code }
