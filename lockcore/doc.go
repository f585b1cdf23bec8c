// Package lockcore is a lease lock on one DynamoDB item, built so that a
// burst of concurrent AWS Lambda invocations that need the same expensive,
// rate-limited thing agree that exactly one of them fetches it while the
// others wait and then read what it stored.
//
// A [Lock] acquires with one conditional write, renews itself every
// max(floor, lease/3), stops at a hard maximum hold, and hands out a fencing
// token ([Lock.Fence]) that the protected resource must check. Its holder
// context ([Lock.Context]) is cancelled with a cause as soon as the lock can
// no longer be trusted: validity is measured on the monotonic clock from
// the time each renewal was sent, whatever the network says.
//
// [Lock.TryAcquireElseWaitForRelease] is the herd pattern:
//
//   - Acquired: fetch, store with the fence, then Release(ctx, Success, ref),
//     or publish the answer itself with Release(ctx, Success, ref,
//     WithAnswer(b));
//   - Released: another invocation stored the data; read it (or take
//     WaitResult.Answer);
//   - Failed: waited too long, the store failed, or the holders of this
//     burst failed ([ErrHolderFailed]).
//
// A lock whose holder crashed, timed out or released a failure is never
// reported as Released: the waiters race one conditional write and exactly
// one of them acquires it (WaitResult.TookOver).
//
// A failure is shared: Release(ctx, Failure, "", WithNotBefore(t),
// WithFailureReason(code)) publishes when a new attempt may start and why
// the last one failed, and the item counts the failed attempts of the
// episode. Nobody takes over before the not-before time, and once the
// episode has had [WithMaxAttempts] failed attempts, those who come to the
// lock while the failure is recent end Failed with a *[HolderFailedError]
// instead of calling the failing upstream again. The acquire condition
// encodes both rules, so a newcomer that never saw the failure is held back
// too.
//
// The lock talks to storage through [Store]. [DynamoStore] uses DynamoDB;
// [MemoryStore] keeps the same semantics in process for tests and local
// runs. Package storetest checks any Store against the contract.
//
// What the fence guarantees: a holder paused past its lease (GC, Lambda
// freeze, network delay) can still act late; no lease prevents that. A
// resource that refuses writes whose fence is below the highest it has
// accepted turns such a late act into a rejected write. The lease alone
// makes late acts rare; the fence makes them harmless.
package lockcore
