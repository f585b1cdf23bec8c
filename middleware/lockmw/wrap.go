package lockmw

import (
	"context"
	"log/slog"
	"sync"

	"github.com/herdlock/herdlock/lockcore/storeapi"
)

// Wrap returns h wrapped in a lock on store, in the shape that lambda.Start
// accepts:
//
//	lambda.Start(lockmw.Wrap(fetchAndStore, store, keyOf))
//
// The store (such as a [lockcore.DynamoStore]) and the key function, which
// takes the lock id from the event, are required; [StaticKey] gives every
// invocation one id. Wrap(h, store, key, opts...) is
// WrapHandlers(Handlers[TIn, TOut]{Fetch: h}, store, key, opts...): see
// [WrapHandlers] for what an invocation does.
//
// Wrap never panics on a bad configuration: it logs the error once and the
// returned handler returns it, matching lockcore.ErrConfig, on every call. Use
// [New] to get the error instead. The returned handler is safe for
// concurrent use.
func Wrap[TIn, TOut any](h func(context.Context, TIn) (TOut, error), store storeapi.Store,
	key func(context.Context, TIn) (string, error), opts ...Option) func(context.Context, TIn) (TOut, error) {
	return WrapHandlers(Handlers[TIn, TOut]{Fetch: h}, store, key, opts...)
}

// WrapHandlers returns the handlers hs wrapped in a lock on store, in the
// shape that lambda.Start accepts. Each invocation takes the lock id from
// the event with key and calls
// [lockcore.Lock.TryAcquireElseWaitForRelease], holding and waiting at
// most until the context's deadline minus the safety margin. Then:
//
//   - ACQUIRED (also after a take-over): hs.Fetch runs with the lock's
//     holder context, which is cancelled, with a cause that
//     [context.Cause] returns, when the lease is lost
//     (lockcore.ErrLeaseLost) or the maximum hold is reached
//     (lockcore.ErrMaxHoldReached). The lock is released before the
//     invocation returns, publishing success (with the hs.ResultRef
//     reference) when Fetch returns a nil error and failure otherwise. If
//     Fetch or ResultRef panics, the lock is released as failure and the
//     panic goes on.
//   - RELEASED: hs.OnReleased runs when it is set. When it is nil, the
//     invocation returns the holder's inline answer, decoded with
//     hs.Codec; Fetch does not run. An answer that was not published
//     inline is an error matching [ErrNoAnswer] (or hs.OnFailed's
//     fallback, when it is set).
//   - FAILED: hs.OnFailed runs, or the invocation returns an error
//     matching [ErrLockFailed].
//
// The handlers find the outcome, fence and revision with [FromContext].
// Every invocation, also one that returns before trying the lock (no time
// left, no key, no account), flushes one metrics document, logs one line,
// and, with a [Telemetry].Tracer, records its spans.
//
// Like [Wrap], it never panics on a bad configuration. The returned
// handler is safe for concurrent use.
func WrapHandlers[TIn, TOut any](hs Handlers[TIn, TOut], store storeapi.Store,
	key func(context.Context, TIn) (string, error), opts ...Option) func(context.Context, TIn) (TOut, error) {
	f, err := NewHandlers(hs, store, key, opts...)
	if err == nil {
		return f
	}
	return configErrorHandler[TIn, TOut](err, loggerOf(opts))
}

// New is [Wrap], but returns the configuration error, which matches
// lockcore.ErrConfig and names every problem found, instead of a handler that
// returns it.
func New[TIn, TOut any](h func(context.Context, TIn) (TOut, error), store storeapi.Store,
	key func(context.Context, TIn) (string, error), opts ...Option) (func(context.Context, TIn) (TOut, error), error) {
	return NewHandlers(Handlers[TIn, TOut]{Fetch: h}, store, key, opts...)
}

// NewHandlers is [WrapHandlers], but returns the configuration error, which
// matches lockcore.ErrConfig and names every problem found, instead of a handler
// that returns it.
func NewHandlers[TIn, TOut any](hs Handlers[TIn, TOut], store storeapi.Store,
	key func(context.Context, TIn) (string, error), opts ...Option) (func(context.Context, TIn) (TOut, error), error) {
	w, err := newWrapper(hs, store, key, opts)
	if err != nil {
		return nil, err
	}
	return w.invoke, nil
}

// configErrorHandler returns a handler that fails every invocation with
// err, logging it once.
func configErrorHandler[TIn, TOut any](err error, log *slog.Logger) func(context.Context, TIn) (TOut, error) {
	var once sync.Once
	return func(ctx context.Context, _ TIn) (TOut, error) {
		once.Do(func() {
			log.ErrorContext(ctx, "lockmw: invalid configuration; every invocation fails", slog.Any("error", err))
		})
		var zero TOut
		return zero, err
	}
}

// loggerOf returns the logger that opts set, or the default logger.
func loggerOf(opts []Option) *slog.Logger {
	var o options
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	if o.tel.Logger != nil {
		return o.tel.Logger
	}
	return defaultLogger()
}
