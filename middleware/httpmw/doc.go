// Package httpmw puts the lock of package lockmw behind an HTTP front door:
// API Gateway REST proxy integrations ([WrapREST]), HTTP API payload 2.0
// ([WrapHTTPAPI]), Lambda function URLs ([WrapFunctionURL]) and Application
// Load Balancer targets ([WrapALB]). Each adapter is a thin conversion of
// its event shape around one shared core; none adds lock logic of its own.
//
// The key function takes the lock id from the typed request (see
// [PathParam], [Query], [Header] and [JSONBody] for the usual places), and
// the handler gets the typed request and answers a [Response]: the status
// it chose (200 when zero) and a body, encoded with the [Codec] (JSON by
// default, [WithCodec]) and sent with its Content-Type. The holder of the
// lock publishes that answer inline; every waiter of the burst answers
// with the same status and bytes.
//
// Outcomes map to HTTP as clients and caches read them:
//
//   - success: the handler's status and body; with [WithFreshness] a 200
//     also carries Cache-Control: max-age for what is left of the window;
//   - the holders of the burst failed (lockcore.ErrHolderFailed) with a
//     throttle reason (see [WithThrottleReason]): 429 with Retry-After,
//     the whole seconds until the failure's not-before, at least 1;
//   - any other shared failure, a wait that ran out, a store that failed,
//     no time left: 503 with Retry-After;
//   - no usable key (the key function failed, the id is longer than a
//     DynamoDB partition key may be) or a request that cannot be read:
//     400;
//   - the handler's own error: 502, or 429 or 503 with Retry-After when
//     the error carries lockmw's retry hints (lockmw.RetryAfterer,
//     lockmw.FailureCoder), so that the holder tells its client what the
//     waiters tell theirs.
//
// Error answers are application/problem+json (RFC 9457) with the status, a
// title and the failure code of lockmw.ErrorCode; they never carry an
// error's text, an upstream's body or URL, or a stack. The adapters return
// a nil error for every request, so the front door never turns a lock
// outcome into its own opaque 502.
package httpmw
