package idempotency

import (
	"context"
	"errors"

	"github.com/herdlock/herdlock/middleware/lockmw"
)

// Handlers are the functions of one idempotent operation, typed by its
// event TIn and its answer TOut, so that a function of other types does
// not compile. Handle and Key are required. A Handlers value is copied
// by [Wrap] and [New]: changing it afterwards changes nothing. The
// functions must be safe for concurrent use.
type Handlers[TIn, TOut any] struct {
	// Handle is the handler: it runs once per key and retention, in the
	// invocation that holds the key's record, with the lock's holder
	// context (cancelled when the lease is lost or the maximum hold
	// reached). [FromContext] gives it the key and its fence. Required.
	Handle func(ctx context.Context, event TIn) (TOut, error)

	// Key returns the event's idempotency key. "" means the event has
	// none: an error matching lockmw.ErrKey, or, with [Keys].Optional, a run
	// without idempotency. An error fails the invocation with lockmw.ErrKey.
	// Required.
	Key func(ctx context.Context, event TIn) (string, error)

	// Payload returns the part of the event whose fingerprint is stored
	// with the answer and compared on every replay: a replay of a key
	// whose payload differs fails with [ErrPayloadMismatch]. It must be
	// encodable as JSON; the fingerprint is the SHA-256 of its canonical
	// JSON (object keys sorted). Its strings must be UTF-8: encoding/json
	// writes any other byte as U+FFFD, so binary data goes as a []byte
	// (a json.RawMessage that is not UTF-8 is hashed as its bytes).
	// Default (nil): the whole event.
	Payload func(event TIn) any

	// OnReplay runs instead of returning a replayed answer as it is,
	// with a context whose [FromContext] says Replay: the response hook
	// of Powertools, to mark or adapt a replay. Default (nil): the answer
	// is returned as stored.
	OnReplay func(ctx context.Context, event TIn, answer TOut) (TOut, error)

	// Codec encodes the answers stored with the records. Default (nil):
	// lockmw.JSONCodec.
	Codec lockmw.Codec[TOut]
}

// check reports the missing required functions.
func (hs *Handlers[TIn, TOut]) check() error {
	var errs []error
	if hs.Handle == nil {
		errs = append(errs, errors.New("nil Handle"))
	}
	if hs.Key == nil {
		errs = append(errs, errors.New("nil Key"))
	}
	return errors.Join(errs...)
}
