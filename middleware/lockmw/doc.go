// Package lockmw is the AWS Lambda handler middleware of herdlock: it lets
// many concurrent invocations that need the same expensive, rate-limited
// thing agree that exactly one of them fetches it, while the others wait and
// then return what it got.
//
//	h := lockmw.Wrap(fetchRate, store, func(ctx context.Context, e Event) (string, error) { return e.Pair, nil })
//	lambda.Start(h)
//
// [Wrap] and [WrapHandlers] keep the handler shape of aws-lambda-go,
// func(context.Context, TIn) (TOut, error), so they compose with
// lambda.Start and other wrappers, and they use no reflection. The store and
// the key function are required, so they are arguments; the functions of
// the handler's types are in [Handlers], so a mismatched one does not
// compile; everything else is an [Option]. Per invocation it builds one
// [lockcore.Lock] and calls TryAcquireElseWaitForRelease:
//
//   - ACQUIRED: the handler fetches. Its context is the lock's holder
//     context, cancelled with a cause when the lease is lost or the maximum
//     hold is reached; a write to a store of its own carries the fence from
//     [FromContext], so a late holder can never overwrite fresher data. The
//     lock is released before the invocation returns: success when the
//     handler returned a nil error, failure otherwise (and on panic, before
//     the panic goes on). A failure is shared with the burst: an error that
//     implements [RetryAfterer] sets when the next attempt may start, one
//     that implements [FailureReasoner] the published reason.
//   - RELEASED: another invocation published success. With no read handler
//     the invocation returns the holder's result, which came inline, in the
//     lock item, with the release (see [Handlers].OnReleased for the bounds
//     and the cost); with Handlers.OnReleased, that runs and reads what the
//     holder stored. Also RELEASED is an invocation that comes up to
//     [DefaultFreshSuccess] (10 s) after a published success: it returns
//     that answer without fetching, so the lock table is a short response
//     cache; WithLockOptions(lockcore.WithFreshSuccess(d)) sets the window,
//     0 turns it off.
//   - FAILED: an error matching [ErrLockFailed], or the Handlers.OnFailed
//     fallback. When the holders of the burst failed and the next attempt
//     may not start before the invocation's deadline, it also matches
//     lockcore.ErrHolderFailed, and its *lockcore.HolderFailedError
//     carries their reason and the not-before: the earliest time at which
//     a new attempt may start (the upstream's Retry-After, or the
//     hold-back after the burst used up its attempts).
//
// # Deadline
//
// Lambda ends an invocation at its deadline, and on its default capacity
// may freeze the process once the handler returns, so nothing of an
// invocation may be left running after it: the lock is released and the
// metrics flushed before the handler returns. The lock is held, and waited
// for, until ctx.Deadline() minus the safety margin ([DefaultSafetyMargin],
// [WithSafetyMargin]); the margin covers the release, the metrics flush,
// and a waiter's own read and reply. An invocation with no deadline (a
// local run) uses lockcore's defaults.
//
// # Outside Lambda
//
// The middleware runs outside Lambda too (a test, a local run on
// lockcore.NewMemoryStore or a local DynamoDB): with no Lambda context in
// ctx the lock item records the holder as hostname:pid, and with no
// function ARN the record account as account 1, application 1 (see
// [Holder]), and the lock group
// is "herdlock" unless AWS_LAMBDA_FUNCTION_NAME or [WithLockGroup] names
// one.
//
// # Many invocations per process
//
// On Lambda Managed Instances one process runs several invocations at once
// (aws-lambda-go starts AWS_LAMBDA_MAX_CONCURRENCY invocation loops) and is
// not frozen between them. The wrapped handler is safe for that, and:
//
//   - invocations that want the same lock at the same time share one lock
//     attempt (on by default; [WithoutCoalescing] turns it off): the first leads and runs
//     the protocol on the store; the others wait in the process, each until
//     its own deadline less the margin, and are RELEASED with the leader's
//     published success ([Info].Coalesced), or try the lock on their own,
//     with what is left of their wait, as soon as the leader failed or its
//     hold ended without a publication;
//   - each invocation writes its own metrics document, through its own
//     [emf.Batch]; the handler adds to it with [Metrics] and logs with
//     [Logger], which carries the request id;
//   - a handler panic makes aws-lambda-go end the process once its other
//     running invocations return; the panicking invocation's lock is
//     released as failure first. [WithPanicAsError] returns the panic as an
//     error instead, and the process lives on.
//
// # Observability
//
// Each invocation, also one that returns before trying the lock (outcome
// NOT_TRIED, with the metric LockNotTried), writes one
// embedded-metric-format document (package emf) to stdout: lockcore's lock
// metrics, the service as the only dimension, and the lock id, group,
// outcome, fence and request id as properties, never dimensions. It logs
// one line with log/slog (JSON inside Lambda, on stderr, at the level
// [Telemetry].Logger describes) carrying the outcome, fence and durations: at
// Debug for a routine outcome, Info for a take-over, Warn for a handler
// error or a lost lock, and Error for a failed release or an invocation
// that did not try the lock.
// A handler's own metrics and log lines join the invocation's through
// [Metrics] and [Logger].
//
// # Tracing
//
// With a [Tracer] ([Telemetry].Tracer) it records the spans "herdlock",
// "lock.acquire", "lock.wait" (back-dated to the start of the wait) and
// "lock.release", with the outcome, fence, take-over and polls as
// attributes. Package xraytracer records them as X-Ray subsegments (its
// Setup is the one call that configures the X-Ray SDK's process-wide
// logger and context-missing strategy, and its InstrumentDynamoDB adds the
// DynamoDB calls); package oteltracer
// as OpenTelemetry spans parented on the invocation's Lambda trace header,
// with the DynamoDB calls through the SDK client's native tracer provider.
// [MultiTracer] runs both during a migration. Without a tracer nothing is
// traced, at the cost of a nil check per phase. The package itself sets no
// process-wide state at import.
package lockmw
