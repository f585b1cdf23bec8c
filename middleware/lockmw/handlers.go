package lockmw

import (
	"context"
	"errors"
	"strings"
)

// Handlers are the functions of one coalesced handler, typed by its event
// TIn and its result TOut, so that a function of other types does not
// compile. Only Fetch is required. A Handlers value is read once, by
// [WrapHandlers] or [NewHandlers]; the functions must be safe for
// concurrent use when the wrapped handler is.
type Handlers[TIn, TOut any] struct {
	// Fetch runs in the invocation that holds the lock (ACQUIRED, also
	// after a take-over), with the lock's holder context. Required.
	Fetch func(ctx context.Context, event TIn) (TOut, error)

	// OnReleased is the "read" handler: it runs instead of Fetch when the
	// outcome is RELEASED, that is, another invocation fetched and
	// published success, and reads what that holder stored (the
	// reference is in [Info].ResultRef). Give Fetch itself to have it run
	// for RELEASED too, branching on FromContext(ctx).Outcome.
	//
	// Default (nil): inline answers. The holder publishes its result,
	// encoded with Codec, in the lock item with its success release, in
	// the same conditional write, and every waiter that sees the success
	// returns it decoded: no cache, no read of anything else. A waiter
	// accepts only the answer written by the release whose success it
	// sees. An answer larger than [Answers].MaxInlineBytes allows goes
	// by reference to the [Answers].Store; without one it is not
	// published: the holder's release still succeeds, its log line says
	// why, and the waiters get an error matching [ErrNoAnswer] (or
	// OnFailed runs).
	//
	// With lockcore.WithFreshSuccess(d) the lock table becomes a
	// short-lived response cache: an invocation that arrives less than d
	// after a published success returns the answer from its first, refused,
	// acquire (one request, the refused write returns the item). That
	// request is billed on the item's size, which the answer dominates
	// (64 KiB at most by default, see [Answers]).
	OnReleased func(ctx context.Context, event TIn) (TOut, error)

	// OnFailed is the fallback that runs when the outcome is FAILED: the
	// lock was neither acquired nor released in time, or the store failed
	// (err matches [ErrLockFailed] and says why), or, with inline answers,
	// when the holder's success came without a usable answer (err matches
	// [ErrNoAnswer]). Default (nil): the invocation returns that error.
	OnFailed func(ctx context.Context, event TIn, err error) (TOut, error)

	// ResultRef turns a successful Fetch result into the reference
	// published with the release, which waiters find in
	// [Info].ResultRef: a cache key, an S3 URI. Default (nil): the empty
	// reference. If it panics, the lock is released as failure and the
	// panic goes on.
	ResultRef func(result TOut) string

	// Codec encodes the inline answers (see OnReleased). Default (nil):
	// [JSONCodec]; then a result type that encoding/json cannot encode
	// (a channel, a function) is a configuration error. Only with a nil
	// OnReleased.
	Codec Codec[TOut]
}

// StaticKey returns a key function that gives every invocation the same
// lock id, for a handler whose invocations all need one thing. A blank id
// makes every invocation return an error matching [ErrKey]. The function
// is safe for concurrent use.
func StaticKey[TIn any](id string) func(ctx context.Context, event TIn) (string, error) {
	id = strings.TrimSpace(id)
	return func(context.Context, TIn) (string, error) {
		if id == "" {
			return "", errBlankStaticKey
		}
		return id, nil
	}
}

var errBlankStaticKey = errors.New("StaticKey: blank id")

// check reports the errors of hs.
func (hs *Handlers[TIn, TOut]) check() error {
	if hs.Fetch == nil {
		return errors.New("nil handler")
	}
	return checkCodec(hs)
}
