package lockmw

import (
	"errors"
	"fmt"
)

// ErrHandlerPanicked is wrapped in the error an invocation returns, with
// [WithPanicAsError], when a handler (Fetch, OnReleased, OnFailed or
// ResultRef) panicked; the lock was released as failure before. Without
// that option it is the error of the invocation's log line and trace, and
// the panic goes on.
var ErrHandlerPanicked = errors.New("lockmw: handler panicked")

// WithPanicAsError makes a panicking handler return an error matching
// [ErrHandlerPanicked] instead of panicking on. Default: off, the panic
// goes on, after the lock is released as failure, the log line written and
// the metrics flushed.
//
// aws-lambda-go (v1.55) reports a panic as the invocation's error and then
// ends the process: with AWS_LAMBDA_MAX_CONCURRENCY above 1 (Lambda
// Managed Instances) its other invocation loops take no new invocation,
// the ones running now finish, and the process exits; every invocation
// that was waiting in the process for this one's lock attempt falls back
// to the lock on its own. Turning the panic into an error keeps the
// process, its warm clients and its other invocations running; the error
// carries the panic value, and the stack goes to the log at Error level.
func WithPanicAsError() Option {
	return func(o *options) { o.panicAsError = true }
}

// panicError turns a recovered panic value into the invocation's error.
func panicError(v any) error {
	if err, ok := v.(error); ok {
		return fmt.Errorf("%w: %w", ErrHandlerPanicked, err)
	}
	return fmt.Errorf("%w: %v", ErrHandlerPanicked, v)
}
