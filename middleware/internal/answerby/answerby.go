// Package answerby carries, from a front door to lockmw, the time by
// which an invocation must answer its own caller when that comes before
// the Lambda deadline: behind API Gateway, the integration timeout, after
// which the gateway has answered 504 and the client is gone. lockmw ends
// the holder's release by then, so that a slow or hung table does not
// hold the holder's own answer past it; the handler's hold is not cut
// short.
package answerby

import (
	"context"
	"time"
)

type key struct{}

// With returns ctx carrying t as the time to answer by; an earlier time
// already carried stays.
func With(ctx context.Context, t time.Time) context.Context {
	if prev, ok := From(ctx); ok && prev.Before(t) {
		return ctx
	}
	return context.WithValue(ctx, key{}, t)
}

// From returns the time to answer by that ctx carries, if any.
func From(ctx context.Context) (time.Time, bool) {
	t, ok := ctx.Value(key{}).(time.Time)
	return t, ok
}
