// Package httpmw puts the lock of package lockmw behind an HTTP front door:
// API Gateway REST proxy integrations ([NewREST]), HTTP API payload 2.0
// ([NewHTTPAPI]), Lambda function URLs ([NewFunctionURL]) and Application
// Load Balancer targets ([NewALB]). Each adapter is a thin conversion of
// its event shape around one shared core; none adds lock logic of its own.
//
// The key function takes the lock id from the typed request (see
// [PathParam], [Query], [Header] and [JSONBody] for the usual places), and
// the handler gets the typed request and answers a [Response]: the status
// it chose (200 when zero) and a body, encoded with the [BodyCodec] (JSON by
// default, [WithCodec]) and sent with its Content-Type.
//
// # Which requests share an answer
//
// Only GET and HEAD, the safe methods whose answers are reusable (RFC 9110
// §9.2.1), go through the lock: the holder publishes its answer inline and
// every waiter of the burst, and every request within the fresh-success
// window, answers with the same status and bytes. A HEAD shares the GET's
// answer and is sent it without content (RFC 9110 §9.3.2: the header
// fields of the GET, no content), so a handler answers a HEAD as it
// answers the GET. Every other method (POST, PUT, DELETE, PATCH, OPTIONS,
// a method in other case) runs its own handler without the lock, and its
// answer is shared with nobody: a preflight's 204 never answers a GET, a
// PUT never gets a GET's 200. The handler then finds no lockmw.Info in
// its context (lockmw.FromContext reports false). A request that finds the
// key's success published by a front without an HTTP answer (an sqsmw
// refresher on the same lock group: the fronts publish one format) runs
// its own handler the same way. A key taken by [Header] makes every
// answer name that header in Vary (RFC 9110 §12.5.5): the answer depends
// on it, and a cache in front must not give one key's answer to another;
// a GET or HEAD with content (a key in the body, [JSONBody]) is answered
// with Cache-Control: no-store, since no cache keys on content.
// Requests of one key share answers whoever sends them: an answer that
// depends on the client (its Authorization, its cookies) needs a key that
// tells clients apart ([Header] on that field), or the client checked
// before the handler (an API Gateway authorizer), else one client's answer
// reaches another.
//
// An answer is published inline in the lock item, compressed when that
// helps, up to lockmw.Answers.MaxInlineBytes (64 KiB by default); a larger one
// needs a lockmw.Answers.Store (given with [WithLockmwOptions]) to go by
// reference, else the key's other requests are answered 500 no_answer and
// the holder's log line says why at Error level (503 with Retry-After when
// the answer store fails for a moment: a throttle, a 5xx, a timeout).
// An answer whose response is over what the front sends (6 MB for a
// synchronous invocation, 1 MB for an ALB target) is answered 500
// no_answer, to the holder too, not left to the front's own 502.
//
// Outcomes map to HTTP as clients and caches read them:
//
//   - success: the handler's status and body; with [WithFreshSuccess] a 200
//     also carries Cache-Control: max-age for what is left of the window;
//     a 204, 205 or 304 carries neither body nor Content-Type. A 304, 412, 206
//     or 416 answers the request's own preconditions or Range (RFC 9110
//     §13.1, §14.2): it goes to that client only, and the lock is freed
//     as after a bad request, so a waiter runs its own handler;
//   - the holders of the burst failed (lockcore.ErrHolderFailed) with a
//     throttle reason (one that contains "throttl", "rate_limit" or
//     "too_many", as upstream_throttled does): 429 with Retry-After;
//   - any other shared failure, a wait that ran out, a store that failed
//     in a way that passes (a throttle, a 5xx), no time left: 503 with
//     Retry-After;
//   - a lock table that cannot work (AccessDeniedException,
//     ResourceNotFoundException: a client fault other than a throttle) or
//     a configuration error found at a call: 500 with the reason
//     "configuration", no Retry-After (one found when the handler is
//     built is the constructor's error, matching lockcore.ErrConfig);
//   - no usable key (the key function failed, the id is longer than a
//     DynamoDB partition key may be), or the handler's error matching
//     [ErrBadRequest] or lockmw.ErrBadInput: 400; the handler's bad
//     request is not shared, not published as the key's failure and not
//     counted as an attempt, and is logged at Warn;
//   - the handler's own error: 502, or 429 or 503 with Retry-After when
//     the error carries lockmw's retry hints (lockmw.RetryAfterer,
//     lockmw.FailureReasoner), so that the holder tells its client what the
//     waiters tell theirs;
//   - the handler's own 5xx or 429 Response: sent to its client as it
//     is, and released as the key's failure (reason "status_503" and so
//     on; "too_many_requests" for a 429, which the waiters answer 429),
//     not shared as a success (RFC 6585 §4: no cache stores a 429);
//   - a panic of the handler, the key function or the codec: 500 with the
//     reason "internal"; a lock held is released as failure and the panic
//     goes no further, whatever the method.
//
// Retry-After is whole seconds (RFC 9110 §10.2.3): the time until the
// shared failure's not-before, rounded up, or 1 s when there is none,
// spread by up to half of it (at least 2 s) so that a herd told to come
// back does not come back in the same second, and never before the
// not-before. Behind API Gateway ([NewREST], [NewHTTPAPI]) a waiter
// answers 2 s before the integration timeout ([WithIntegrationTimeout],
// 29 s by default), not after it; function URLs and ALB targets have no
// limit below the function's own.
//
// Error answers are application/problem+json (RFC 9457) with the type
// about:blank, the status, its title and the failure reason (the "code"
// member: the reasons are listed in docs/fronts.md); they never carry
// an error's text, an AWS error code, an upstream's body or URL, or a
// stack, and have Cache-Control: no-store. The adapters return a nil error
// for every request, so the front door never turns a lock outcome into its
// own opaque 502.
package httpmw
