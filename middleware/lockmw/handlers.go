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
	// reference is in [Info].ResultRef). Default (nil): Fetch runs for
	// RELEASED too and branches on FromContext(ctx).Outcome.
	OnReleased func(ctx context.Context, event TIn) (TOut, error)

	// OnFailed is the fallback that runs when the outcome is FAILED: the
	// lock was neither acquired nor released in time, or the store failed.
	// err matches [ErrLockFailed] and says why. Default (nil): the
	// invocation returns that error.
	OnFailed func(ctx context.Context, event TIn, err error) (TOut, error)

	// ResultRef turns a successful Fetch result into the reference
	// published with the release, which waiters find in
	// [Info].ResultRef: a cache key, an S3 URI. Default (nil): the empty
	// reference. If it panics, the lock is released as failure and the
	// panic goes on.
	ResultRef func(result TOut) string
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
	return nil
}
