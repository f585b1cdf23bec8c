package httpmw

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"

	"github.com/herdlock/herdlock/middleware/lockmw"
)

// sharesAnswers reports whether a request of method may be answered from
// another request's answer: only GET and HEAD, the safe methods whose
// answers are reusable (RFC 9110 §9.2.1; a HEAD is the GET without
// content, §9.3.2). OPTIONS and TRACE are safe too, but a preflight's or
// a trace's answer is its own. Methods are case-sensitive (§9.1).
func sharesAnswers(method string) bool {
	return method == http.MethodGet || method == http.MethodHead
}

// runOwn answers a request with its own handler, without the lock: a
// request whose method does not share answers, or one that found the key
// done by a front without an HTTP answer. The key is still checked (a
// request without one is answered 400). Nothing is published.
func (c *core[Req, T]) runOwn(ctx context.Context, req Req) (r reply) {
	defer func() { // the key function's panic, the handler's or the codec's
		if v := recover(); v != nil {
			slog.Default().ErrorContext(ctx, "httpmw: panic in a request that runs without the lock; answered 500",
				slog.Any("panic", v), slog.String("stack", string(debug.Stack())))
			r = problemReply(http.StatusInternalServerError, reasonInternal, nil)
		}
	}()
	if _, err := c.key(ctx, req); err != nil {
		return c.failure(fmt.Errorf("%w: %w", lockmw.ErrKey, err)) // as lockmw does
	}
	resp, err := c.h(ctx, req)
	if err != nil {
		return c.failure(err)
	}
	a, err := c.answerOf(resp)
	if err != nil {
		return c.failure(err)
	}
	return plainReply(a)
}
