package lockcore

import (
	"context"
	"time"
)

// Store is the storage behind a [Lock]: one item per lock key, changed only
// by the conditional operations below. Every method must be atomic with
// respect to the others on the same key, and reads must be strongly
// consistent. [DynamoStore] and [MemoryStore] implement it; the suite in
// package storetest checks any implementation against these rules.
//
// Implementations must be safe for concurrent use.
type Store interface {
	// Acquire writes a new holder into the item in one conditional write.
	// The condition holds when any of these is true:
	//   - the item does not exist;
	//   - the item is released, unless req.FreshSuccessSinceMs is set and
	//     the item was released with Success at or after it;
	//   - req.UseWallClock and the item's ExpiresAtMs or LeaseUntilMs is
	//     below req.NowMs - req.ClockAllowance (in milliseconds);
	//   - req.Observed is set and the item's Revision and Beat equal it.
	// On success the item gets Owner, Revision, Lease, HeartbeatAtMs =
	// NowMs, LeaseUntilMs, ExpiresAtMs, RecordAccount and TTL from req,
	// Released=false, Beat=0, Waiters=0, Fence = (Fence, or req.FenceBase
	// when the item has none) + 1, and no Result, ResultRef, ResultFence
	// or ReleasedAtMs. Acquire returns the item as written.
	//
	// When the condition fails, Acquire returns a *[ConditionError]
	// carrying the current item, except when that item already carries
	// req.Revision: then an earlier attempt of this same request was
	// applied (its response was lost) and Acquire returns that item with a
	// nil error.
	Acquire(ctx context.Context, req AcquireRequest) (Item, error)

	// Renew extends the lease of the holder named by req.Revision: it sets
	// HeartbeatAtMs and LeaseUntilMs and adds 1 to Beat, on condition that
	// the item exists, carries req.Revision, is not released, and has a
	// LeaseUntilMs no later than req.LeaseUntilMs, so that a renewal applied
	// late (an SDK attempt that timed out on the client, after a later
	// renewal) can never shorten the lease that waiters judge by the wall
	// clock. A failed condition is a *[ConditionError] with the current item.
	Renew(ctx context.Context, req RenewRequest) (Item, error)

	// Release publishes the holder's result: Released=true, ReleasedAtMs,
	// Result, ResultRef, and ResultFence = Fence, on condition that the
	// item carries req.Revision and is either not released or already
	// released with the same Result (so a retried release succeeds). A
	// failed condition is a *[ConditionError] with the current item.
	Release(ctx context.Context, req ReleaseRequest) (Item, error)

	// Enroll adds 1 to the item's Waiters count on condition that the item
	// carries revision, and returns the item as written. Waiters use the
	// count to spread their polls so that the read rate on one key stays
	// bounded however many wait. A failed condition is a *[ConditionError].
	Enroll(ctx context.Context, key Key, revision string) (Item, error)

	// Get reads the item with a strongly consistent read. found is false
	// when there is no item.
	Get(ctx context.Context, key Key) (item Item, found bool, err error)
}

// Key names one lock: a group (a kind of resource, such as "fx-rates") and an
// id within it (such as "EUR-USD").
type Key struct {
	Group string
	ID    string
}

// Item is the stored state of one lock. Times ending in Ms are Unix epoch
// milliseconds from the writer's wall clock: they are advisory, and only the
// wall-clock fast path compares them.
type Item struct {
	Key           Key
	Owner         string        // diagnostics only; never used in a condition
	Revision      string        // random per acquisition; compared for equality only
	Fence         int64         // +1 on every acquisition, never reset
	Beat          int64         // +1 on every renewal
	Lease         time.Duration // lease length chosen by the holder
	HeartbeatAtMs int64
	LeaseUntilMs  int64
	ExpiresAtMs   int64 // hard maximum hold
	Released      bool
	Result        Result // set by Release
	ResultRef     string // set by Release: where waiters find the result
	ResultFence   int64  // set by Release: the fence that produced the result
	ReleasedAtMs  int64
	RecordAccount string // "act:{accountId}/app:{appId}"
	Waiters       int64  // waiters enrolled since this revision was acquired
	TTL           int64  // Unix epoch seconds, for clean-up only; 0 when unset
}

// Observation is what a waiter saw of the item: the holder's revision and
// heartbeat count. If the item still shows the same pair after a whole lease
// measured on the waiter's own monotonic clock, the holder has stopped
// renewing and the waiter may take over without trusting anybody's wall
// clock.
type Observation struct {
	Revision string
	Beat     int64
}

// AcquireRequest is the input of [Store.Acquire].
type AcquireRequest struct {
	Key           Key
	Owner         string
	Revision      string // the new revision
	Lease         time.Duration
	NowMs         int64
	LeaseUntilMs  int64
	ExpiresAtMs   int64
	RecordAccount string
	TTL           int64 // Unix epoch seconds, or 0 for none

	// FenceBase seeds the fence of an item that has none, so a key
	// recreated after a TTL deletion still issues higher fences.
	FenceBase int64

	// UseWallClock enables the wall-clock branch of the condition, with
	// ClockAllowance as the assumed bound on clock error.
	UseWallClock   bool
	ClockAllowance time.Duration

	// Observed enables the clock-free branch of the condition.
	Observed *Observation

	// FreshSuccessSinceMs, when not zero, keeps an item released with
	// Success at or after this time from being acquired: a newcomer is to
	// read that published result, not fetch again.
	FreshSuccessSinceMs int64
}

// RenewRequest is the input of [Store.Renew].
type RenewRequest struct {
	Key          Key
	Revision     string
	NowMs        int64
	LeaseUntilMs int64
}

// ReleaseRequest is the input of [Store.Release].
type ReleaseRequest struct {
	Key       Key
	Revision  string
	NowMs     int64
	Result    Result
	ResultRef string
}

// Result is the outcome a holder publishes when it releases the lock.
type Result string

const (
	// Success means the holder stored what waiters came for: they read it
	// instead of fetching again.
	Success Result = "success"
	// Failure means the holder did not finish: one waiter takes over.
	Failure Result = "failure"
)

// Valid reports whether r is Success or Failure.
func (r Result) Valid() bool { return r == Success || r == Failure }
