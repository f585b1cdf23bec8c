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
// episode has had [FailureEpisode].MaxAttempts failed attempts, those who come to the
// lock while the failure is recent end Failed with a *[HolderFailedError]
// instead of calling the failing upstream again. The acquire condition
// encodes both rules, so a newcomer that never saw the failure is held back
// too.
//
// The lock talks to storage through [storeapi.Store]. [DynamoStore] uses
// DynamoDB; [MemoryStore] keeps the same semantics in process for tests and
// local runs. Only those who write a store of their own import package
// storeapi (the interface, the item and its attribute names); package
// storetest checks any store against its contract.
//
// # A hot key, and the DynamoDB client
//
// One lock item is one DynamoDB partition: at most 1000 write and 3000 read
// capacity units per second, whatever the table's capacity mode, and a lock
// item costs one unit per request (a failed conditional write included). In
// a herd each invocation's first request is a strongly consistent read
// (see [HotKeys]) and only one that finds the lock free writes; waiters
// then only read, every poll interval. When the item's capacity is
// spent, DynamoDB throttles, and the lock reads a throttle as a herd, not
// as a failure ([ErrThrottled]): a throttled acquire or poll waits and
// polls less often (the interval doubles per throttled poll in a row, up to
// four times), a throttled renewal or release is retried within
// milliseconds, and only a wait that runs out of time ends Failed, with an
// error naming the throttling and the key. [Herd].ReadFirst reads first
// also on a key the store found free.
//
// [DynamoStore] sets the retry behaviour of every lock call itself, through
// the call's option functions, whatever the client's retryer is: throttles
// are not retried by the SDK (the lock paces itself, and no SDK backoff
// sleeps away a lease), there is no client-side retry quota (so a throttle
// storm cannot leave the release without retries), and renewals and
// releases make one attempt per call, each bounded by the call timeout and
// retried by the lock within the lease's validity or the release timeout.
//
// The call timeout follows the table's latency, as TCP's retransmission
// timer follows its round trips: SRTT + 4·RTTVAR over the answers the
// store gave, twice the last timeout after a call that got none, never
// below [StoreCalls].AttemptTimeout, and never above the renewal interval for a
// renewal (the longer of it and 4× the attempt timeout for the other
// calls, which keep no lease), so that a slow table is slow, not down,
// and renewals are heard before the lease ends. The estimate is kept per store, so the invocations one execution
// environment serves share it. A request that DynamoDB refused as not
// applied (a missing table, a denied permission, a validation error) is
// not retried or settled: the call fails at once with an error matching
// [ErrStoreRefused]; [DynamoStore.CheckTable] finds such a
// misconfiguration at initialisation.
//
// What the lock expects of the client is therefore little, and
// the example does this:
//
//   - one client per process, shared by the lock and the handler;
//
//   - the response checksum validation left on (the default);
//
//   - an HTTP client whose timeouts do not end attempts sooner than the
//     attempt timeout (the default HTTP client's do not);
//
//   - for the handler's own calls on the same client, a retryer without
//     the retry quota and with a short maximum backoff, so that they do not
//     sleep past the invocation's deadline either.
//
// The last one, as the example configures it:
//
//	awsconfig.LoadDefaultConfig(ctx, awsconfig.WithRetryer(func() aws.Retryer {
//		return retry.NewStandard(func(o *retry.StandardOptions) {
//			o.RateLimiter = ratelimit.None
//			o.MaxBackoff = time.Second
//		})
//	}))
//
// What the fence guarantees: a holder paused past its lease (GC, Lambda
// freeze, network delay) can still act late; no lease prevents that. A
// resource that refuses writes whose fence is below the highest it has
// accepted turns such a late act into a rejected write. The lease alone
// makes late acts rare; the fence makes them harmless.
package lockcore
