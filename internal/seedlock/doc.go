// Package seedlock is a faithful Go port of the seed's TypeScript
// DistributedLock, kept as a baseline for
// benchmarks and as the deliberately broken variant of the fault harness's
// self-test. Do not use it to protect anything: it has every flaw listed in
// docs/protocol.md, "The original design and its faults".
//
// What it does, as the seed does:
//   - Acquire reads the item, gives up if it was created or renewed less
//     than one lease ago by the reader's wall clock, sleeps 0–200 ms, makes
//     a conditional PutItem (condition: no item, or the revision it read),
//     then re-reads the item to confirm. A failed condition is an error, so
//     an acquire whose response was lost and whose retry failed is a ghost
//     lock (F5).
//   - Expiry is judged with wall clocks (createdAt + lease), written by one
//     host and read by another (F1).
//   - There is no fencing token; [Lock.Fence] returns the millisecond
//     timestamp of the uuidv7 revision, which follows the holder's clock
//     (F8).
//   - Waiters poll every max(poll, lease/2) and return RELEASED when the
//     item is released, missing, past its maximum, or not renewed for a
//     lease: also when nobody stored anything (F7).
//   - Renew and Release are conditioned on revision (and Release on owner
//     name too, F6); a failed renewal aborts the holder's context.
//
// The item is stored under [storeapi.AttrLockKey] = storeapi.PartitionKey,
// so [lockcore.CreateTable] makes a table it can use; its other attributes
// are the seed's (createdAt, lockDurationMs, expiresAt, isReleased, ...).
//
// To count requests, give the *dynamodb.Client an HTTP client that counts.
package seedlock
