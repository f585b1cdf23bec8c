// Package idempotency makes a Lambda handler idempotent: an operation runs
// once per idempotency key and retention, and every duplicate (an SQS
// redelivery, a client's retry of a POST, an EventBridge redelivery) gets
// the first answer, also one that arrives while the first is still
// running: it waits for the answer instead of failing.
//
//	charge := idempotency.Wrap(idempotency.Handlers[Payment, Receipt]{
//		Handle:  chargeCard,
//		Key:     func(_ context.Context, p Payment) (string, error) { return p.OrderID, nil },
//		Payload: func(p Payment) any { return p.Amount },
//	}, store, idempotency.WithKeys(idempotency.Keys{Prefix: "charge"}))
//	lambda.Start(charge)
//
// It is built on the lock of package lockmw: a record is a lock item, id
// "prefix#key" in the lock group, and its answer is the holder's
// inline answer, published with its success release in the same
// conditional write; the retention is lockcore's fresh-success window
// (lockcore.WithFreshSuccess). So a duplicate is one of the lock's herd:
//
//   - no record, an expired one, or one whose holder failed: the handler
//     runs, holding the record, with the holder context, cancelled when
//     its lease is lost or its maximum hold (the invocation's deadline
//     less the safety margin) is reached;
//   - a completed record younger than the retention ([Retention].Answers,
//     default one hour, checked in the store's condition in milliseconds;
//     DynamoDB's TTL, a day later, only cleans up): its answer is
//     replayed, read from the refused write, a first read, a wait, a
//     follower in the process, or the local cache ([WithCache]);
//   - a record in progress: the duplicate waits for the answer within its
//     own deadline, and fails with [ErrInProgress] only when it cannot.
//     A holder that stopped holds the record for its lease, one that runs
//     on for its maximum hold; then one waiting duplicate takes over.
//
// Every answer carries the fingerprint of the payload that produced it
// (SHA-256 of the canonical JSON of [Handlers].Payload), and every path
// that replays one compares it first: a key reused with another payload
// fails with [ErrPayloadMismatch]. The cache keeps only completed answers
// that the store holds (a holder whose release failed caches nothing) and
// that passed that check. A holder whose release the store did not
// confirm (lockcore.ErrReleaseFailed) does not return its answer, which
// another run could replace once the record's lease lapses: its error
// says a retry gets the key's answer (WrapHTTP: 503 store_unavailable).
//
// A handler error is not kept: the record is released as failed and the
// next duplicate runs (lockcore's failure policy still holds back a key
// whose attempts keep failing). [Retention].Errors keeps it for a window:
// the duplicates inside it are told the reason and the not-before
// (lockcore.ErrHolderFailed) instead of running.
//
// # Side effects and fencing
//
// Only the record's holder completes or fails it: lockcore's release is
// conditioned on the holder's revision, so a late holder, whose lease
// lapsed and whose record was taken over, can neither complete nor delete
// its successor's record, nor can a late copy of its release. But its
// handler may still be running: between the lapse and its wake-up, two
// invocations ran the side effect's code. What makes the side effect
// itself safe is the fence: [FromContext] gives the handler its fencing
// token, higher for every holder, and a write to a store of its own that
// is conditioned on it (write only if the stored fence is lower) refuses
// the late holder's write. A side effect that cannot be fenced (an email,
// a call to an API without an idempotency key of its own) should forward
// the idempotency key, or the fence, to the system that performs it.
// The late holder's own caller does not get the answer its handler
// returned, a second answer for the key: the record, and every
// duplicate, has its successor's. It gets an error matching the cause of
// its hold's end, lockcore.ErrLeaseLost or lockcore.ErrMaxHoldReached
// (WrapHTTP: 409), and its retry gets the key's answer.
//
// # Sources
//
// [Wrap] and [New] take any event type. [SQSHandler] makes a per-record
// SQS handler idempotent for sqsmw.New, by message id or a key from the
// body, with sqsmw's partial batch response. [WrapHTTP] reads the
// Idempotency-Key header of draft-ietf-httpapi-idempotency-key-header-06
// and answers 400, 422 and 409 as problem+json.
//
// # Configuration
//
// Configuration is per operation: [Handlers] and the options are copied
// when the handler is built, and the store (any storeapi.Store) holds no
// configuration, so two operations sharing a store share nothing else.
// Give them distinct prefixes ([Keys].Prefix) when their keys may meet.
//
// # Size
//
// Answers are stored inline, compressed with DEFLATE when that is
// smaller, up to lockcore.MaxAnswerBytes as stored. A larger answer goes
// by reference into the answer store given with lockmw.WithAnswers
// (through [WithLockmwOptions]): the record carries the reference and the
// answer's SHA-256, which every replay checks on what it reads back. An
// answer that cannot be stored (too large with no answer store, refused
// by it) is never lost silently: the record is completed without it, the
// holder's log line says why at Error level, and the holder's caller and
// each duplicate within the retention get an error matching
// lockmw.ErrNoAnswer (WrapHTTP: 500), without running the handler again;
// so does a duplicate whose referenced answer is missing or altered, or
// whose read of it fails (its error carries none of the answer store's
// text). An answer store that hangs does not make the invocation time
// out: its put ends with the hold, its read before the deadline.
package idempotency
