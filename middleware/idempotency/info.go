package idempotency

import (
	"context"
	"time"
)

// Info describes the idempotency of one invocation, as the handler (with
// Replay false) or Handlers.OnReplay (with Replay true) reads it with
// [FromContext]. It is a value: safe to copy and to share.
type Info struct {
	// Key is the event's idempotency key, without prefix; "" when the
	// event had none and [Keys].Optional let it run without idempotency.
	Key string
	// Replay is true when the answer is another invocation's, completed
	// earlier with the same key and payload, and the handler did not run.
	Replay bool
	// Fence is the fencing token of the invocation whose handler ran:
	// this one, or, for a replay, the one that completed the answer. A
	// handler sends it with every write of a side effect, so that a
	// late holder whose record was taken over cannot overwrite what its
	// successor wrote (see the package documentation). 0 without a key.
	Fence int64
	// CompletedAt is when the replayed answer was completed, by its
	// holder's clock; zero when Replay is false.
	CompletedAt time.Time
}

type infoKey struct{}

// FromContext returns the [Info] that the idempotency layer put in the
// context of the handler or of Handlers.OnReplay, and false when ctx
// carries none. It is safe for concurrent use.
func FromContext(ctx context.Context) (Info, bool) {
	info, ok := ctx.Value(infoKey{}).(Info)
	return info, ok
}

func withInfo(ctx context.Context, info Info) context.Context {
	return context.WithValue(ctx, infoKey{}, info)
}
