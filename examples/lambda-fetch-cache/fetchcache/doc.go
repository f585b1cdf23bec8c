// Package fetchcache is the Lambda function of examples/lambda-fetch-cache,
// minus its main: many concurrent invocations want the same item from a
// rate-limited upstream API; [lockmw.Wrap] lets one of them fetch it and
// store it in a DynamoDB cache table, and the others read what it stored.
//
//   - [LoadConfig] reads and checks the environment at init.
//   - [Upstream] calls the API once per attempt with the invocation's
//     context; a 429, a 5xx or a timeout is an [*UpstreamError] whose
//     Retry-After and failure code the lock shares with the whole burst.
//   - [Cache] is the cache table: consistent reads, a freshness TTL, and
//     writes conditioned on the lock's fence.
//   - [NewHandler] puts them together behind the lock.
//   - [NewFronts] adds the front doors on the same fetch: the HTTP API
//     route GET /rates/{pair} and the function URL (package httpmw), and
//     the SQS refresh queue (package sqsmw), each record processed once
//     per message id (idempotency.SQSHandler); [Fronts.Handle] picks one
//     by the event's shape ([Classify]).
//   - The HTTP API route POST /orders ([OrdersRouteKey]) creates an order
//     upstream ([Upstream.CreateOrder]) once per Idempotency-Key header
//     (idempotency.WrapHTTP).
//
// It is a package of its own so that the end-to-end test and the demo can
// share its types and table definitions.
package fetchcache
