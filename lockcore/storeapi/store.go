package storeapi

import (
	"bytes"
	"context"
	"reflect"
	"time"
)

// Store is the storage behind a lockcore.Lock: one item per lock key, changed only
// by the conditional operations below. Every method must be atomic with
// respect to the others on the same key, and reads must be strongly
// consistent. lockcore.DynamoStore and lockcore.MemoryStore implement it; the suite in
// package storetest checks any implementation against these rules.
//
// Every write method refuses, before writing anything, a request with an
// empty revision, a string that is not valid UTF-8 (DynamoDB cannot store
// one), or an invalid result; and a write whose resulting item would exceed
// [MaxItemBytes] fails with an error matching [ErrItemTooLarge] and changes
// nothing, as DynamoDB's ValidationException does.
//
// Implementations must be safe for concurrent use.
type Store interface {
	// Acquire writes a new holder into the item in one conditional write.
	// The condition holds when the item does not exist, or when
	//
	//	(A) at least one of these is true:
	//	  - the item is released;
	//	  - req.UseWallClock, and the item's ExpiresAtMs or LeaseUntilMs is
	//	    below req.NowMs - req.ClockAllowance (in milliseconds);
	//	  - req.Observed is set and the item's Revision and Beat equal it;
	//	(B) and, when req.FreshSuccessSinceMs is not zero, the item is not a
	//	    fresh success: released with Success and ReleasedAtMs >=
	//	    req.FreshSuccessSinceMs;
	//	(C) and, when req.MaxAttempts is positive, the item is not a
	//	    held-back failure: released with Failure, FailRecentUntilMs >
	//	    req.NowMs and NotBeforeMs > req.NowMs. The failing holder
	//	    writes in NotBeforeMs the earliest time at which the next
	//	    attempt may start (the upstream's pacing, or the hold-back of
	//	    an exhausted episode), so the guard compares that one time.
	//
	//(D) and the item does not carry req.Revision, neither as its revision
	//    nor as its PrevRevision: a revision is acquired at most once, so a
	//    late copy of an applied acquire (a request the network delivered
	//    again after the item was released, by its holder or by an
	//    operator) never makes a lock held by nobody, and a retry of an
	//    acquire whose first copy was applied, then released by an
	//    operator or taken over, and then acquired by another holder, does
	//    not bring the released revision back.
	//
	// (B), (C) and (D) guard every branch of (A), so neither a lapsed lease
	// nor a clock-free observation gets past a fresh success, a held-back
	// failure or our own earlier acquisition.
	//
	// On success the item gets Holder, Revision, Lease, HeartbeatAtMs =
	// AcquiredAtMs = NowMs, LeaseUntilMs, ExpiresAtMs, RecordAccount and TTL (none when 0)
	// from req; Released = false, Beat = 0, Fence = (Fence, or req.FenceBase
	// when the item has none) + 1; PrevRevision, PrevResult and
	// PrevFailReason = the previous item's Revision, Result and FailReason
	// ("" when there was none); PublishedRevision and PublishedResult
	// kept; and no
	// Result, ResultRef, ResultFence, ReleasedAtMs or Answer. Failures,
	// NotBeforeMs, FailReason and FailRecentUntilMs are kept: the new holder
	// must know how many attempts its episode has had; so are HoldMeanMs and
	// HoldDevMs, the key's hold history. Acquire returns the item as
	// written.
	//
	// When the condition fails, Acquire returns a *[ConditionError]
	// carrying the current item, except when that item already carries
	// req.Revision and is not released: then an earlier attempt of this
	// same request was applied (its response was lost) and Acquire returns
	// that item with a nil error.
	Acquire(ctx context.Context, req AcquireRequest) (Item, error)

	// Renew records a heartbeat of the holder named by req.Revision, on
	// condition that the item exists, carries req.Revision and is not
	// released. It sets HeartbeatAtMs = req.NowMs, adds 1 to Beat, and sets
	// LeaseUntilMs = max(LeaseUntilMs, req.LeaseUntilMs): a renewal never
	// shortens the lease that waiters judge by the wall clock (one applied
	// late, or sent by a holder whose clock stepped back), yet it always
	// moves the beat that clock-free observers watch. A failed condition is
	// a *[ConditionError] with the current item.
	Renew(ctx context.Context, req RenewRequest) (Item, error)

	// Release publishes the holder's result, on condition that the item
	// carries req.Revision and is not released, or, for an operator's
	// force-release, released with Failure other than the operator's. It
	// sets Released = true, ReleasedAtMs = req.NowMs, Result, ResultRef,
	// and ResultFence = Fence; and
	//   - with Success: Answer = req.Answer (none when empty), and ends the
	//     failure episode: Failures = 0, NotBeforeMs = 0, FailReason = "",
	//     FailRecentUntilMs = 0;
	//   - with Failure: Failures, NotBeforeMs, FailReason and
	//     FailRecentUntilMs from req, or, with req.KeepEpisode, as the item
	//     has them. A Failure request with an Answer is refused before
	//     writing;
	//   - with either result, HoldMeanMs and HoldDevMs from req when
	//     req.HoldMeanMs is positive; otherwise the item's stand;
	//   - PublishedRevision = req.Revision and PublishedResult =
	//     req.Result, the record of this publication; an operator's
	//     force-release sets both to "" (it publishes nobody's result, and
	//     a holder's failure it replaces is no longer its revision's last
	//     release), and a request with req.Unheld leaves them.
	//
	// An Answer longer than [MaxAnswerBytes] is refused before writing with
	// an error matching [ErrAnswerTooLarge].
	//
	// When the condition fails on an item of req.Revision released with
	// req.Result, an earlier attempt of this release was applied (its
	// response was lost): Release returns the item as it is, with a nil
	// error, and writes nothing, so ReleasedAtMs stays the time of that
	// first publication, from which newcomers judge a success's freshness.
	// Not so for a holder's Failure release on an item released with
	// [OperatorReleaseReason]: the operator's release stands, unless the
	// item's PublishedRevision is req.Revision (the reason is the one the
	// holder's own KeepEpisode release kept from an operator's release
	// before its acquisition).
	//
	// When the condition fails but the item shows req.Revision as
	// PrevRevision and req.Result as PrevResult, this release was applied
	// earlier (its response was lost) and a newcomer has acquired since:
	// Release returns the current item with a nil error. Not so for a
	// holder's Failure release when PrevFailReason (or, for an item written
	// before that attribute, FailReason) is [OperatorReleaseReason]: the
	// release the newcomer replaced was the operator's. So too when the
	// item, of another revision, shows req.Revision as PublishedRevision
	// and req.Result as PublishedResult: the release was applied, and
	// since then only acquisitions and the freeing of writes nobody held
	// (req.Unheld) have changed the item, however many (a late copy of an
	// attempt, freed, and the acquisition after it). Otherwise a failed
	// condition is a *[ConditionError] with the current item.
	Release(ctx context.Context, req ReleaseRequest) (Item, error)

	// Get reads the item with a strongly consistent read. found is false
	// when there is no item.
	Get(ctx context.Context, key Key) (item Item, found bool, err error)
}

// MaxAnswerBytes is the largest answer lockcore.Lock.Release and [Store.Release]
// accept with lockcore.WithAnswer: well under DynamoDB's 400 KB item limit, leaving
// room for the rest of the item. Every strongly consistent read of the item
// pays for the answer too (1 read unit per 4 KB), so keep answers small.
const MaxAnswerBytes = 300 * 1024

// MaxItemBytes is DynamoDB's limit on the size of one item (400 KB), as the
// sum of the UTF-8 lengths of the attribute names and the sizes of their
// values. Both stores refuse a write whose item would exceed it.
const MaxItemBytes = 400 * 1024

// Key names one lock: a group (a kind of resource, such as "fx-rates") and an
// id within it (such as "EUR-USD").
type Key struct {
	Group string
	ID    string
}

// Item is the stored state of one lock. Times ending in Ms are Unix epoch
// milliseconds from the writer's wall clock: they are advisory, and only the
// wall-clock fast path and the shared-failure guard compare them. Item holds
// a byte slice, so compare items with [Item.Equal].
type Item struct {
	Key           Key
	Holder        string        // the holder's name (attribute ownerName), for diagnostics only; never used in a condition
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
	TTL           int64  // Unix epoch seconds, for clean-up only; 0 when unset

	// PrevRevision, PrevResult and PrevFailReason are the Revision, Result
	// and FailReason of the item this acquisition replaced, so that a
	// retried Release of the previous holder recognises its own
	// publication, and a holder whose lock an operator released
	// (PrevFailReason [OperatorReleaseReason]) does not take the
	// operator's release for its own.
	PrevRevision   string
	PrevResult     Result
	PrevFailReason string

	// PublishedRevision and PublishedResult are the Revision and Result of
	// the last release that published a holder's result on the item: set
	// by every applied [Store.Release] but the freeing of a write nobody
	// held ([ReleaseRequest].Unheld), which leaves them, and an operator's
	// force-release, which sets them to ""; kept by acquisitions. A
	// retried Release of that holder recognises its publication by them
	// after any number of acquisitions of writes that nobody held (late
	// copies of attempts, freed), where PrevRevision shows only the last.
	PublishedRevision string
	PublishedResult   Result

	// Failures counts the failed attempts in a row, each made while the
	// failure before it was recent (across the exhausted episodes of one
	// outage, see lockcore.FailureEpisode.MaxAttempts);
	// NotBeforeMs is the earliest time at which a new attempt may start,
	// as the last failing holder wrote it (see lockcore.FailureEpisode.MaxAttempts);
	// FailReason is its short reason code; FailRecentUntilMs is until when
	// the failure counts as recent. A Success release sets them to zero;
	// an acquisition keeps them.
	Failures          int64
	NotBeforeMs       int64
	FailReason        string
	FailRecentUntilMs int64

	// Answer is the inline answer published with a Success release (see
	// lockcore.WithAnswer); nil when there is none. An acquisition removes it.
	Answer []byte

	// AcquiredAtMs is when the current holder acquired the item (its
	// NowMs). HoldMeanMs and HoldDevMs are a moving average of this key's
	// hold times (acquire to release) and of their deviation from it,
	// written by each releasing holder and kept by acquisitions, so that
	// waiters can guess when the holder will be done (see lockcore.Lock.
	// TryAcquireElseWaitForRelease]); 0 when no holder has written them.
	AcquiredAtMs int64
	HoldMeanMs   int64
	HoldDevMs    int64
}

// Equal reports whether it and o hold the same values; a nil and an empty
// Answer are equal.
func (it Item) Equal(o Item) bool {
	a, b := it, o
	a.Answer, b.Answer = nil, nil
	return reflect.DeepEqual(a, b) && bytes.Equal(it.Answer, o.Answer)
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
	Holder        string
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

	// MaxAttempts, when positive, keeps an item released with a recent
	// Failure from being acquired before its NotBeforeMs: guard (C) of
	// [Store.Acquire]. The attempt bound itself is applied by the failing
	// holder, which writes the hold-back of an exhausted episode as the
	// not-before (see lockcore.FailureEpisode.MaxAttempts); the stores compare only times.
	// Zero turns the guard off.
	MaxAttempts int64
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

	// Answer is published with Success only; at most [MaxAnswerBytes].
	Answer []byte

	// The failure episode, written with Failure only (see [Item]).
	Failures          int64
	NotBeforeMs       int64
	FailReason        string
	FailRecentUntilMs int64

	// KeepEpisode, with Failure, leaves the item's failure episode as it
	// is and ignores the four fields above: the release frees a hold that
	// made no attempt (a possible ghost of an acquire whose outcome is
	// unknown), so the episode's attempts, reason and not-before stand.
	KeepEpisode bool

	// Unheld, with Failure and KeepEpisode, says that nobody held the
	// revision (the ghost of an acquire whose outcome is unknown, a late
	// copy of an attempt its call gave up): the release frees it and
	// publishes nothing, so it leaves the item's PublishedRevision and
	// PublishedResult as they are. A request with Unheld and Success, or
	// without KeepEpisode, is refused before writing.
	Unheld bool

	// HoldMeanMs and HoldDevMs, when HoldMeanMs is positive, replace the
	// item's hold history (see [Item]); with zero the item's stand.
	HoldMeanMs int64
	HoldDevMs  int64
}

// OperatorReleaseReason is the FailReason of an operator's force-release
// (herdlock release): a Failure release, not keeping the episode, with
// this reason. It is the one Failure release that matches an item already
// released with Failure at its revision whatever that release's reason
// (the operator clears a recent failure, or retries its own release). Any
// other Failure release (a holder's, or the freeing of a possible ghost)
// does not match an item released with this reason, so a holder that an
// operator stopped never overwrites the operator's release. The lock never
// publishes it: lockcore.WithFailureReason replaces it with "unspecified".
const OperatorReleaseReason = "operator_release"

// Result is the outcome a holder publishes when it releases the lock.
type Result string

const (
	// Success means the holder stored what waiters came for: they read it
	// instead of fetching again.
	Success Result = "success"
	// Failure means the holder did not finish: one waiter takes over, when
	// the failure's not-before time and attempt bound allow it.
	Failure Result = "failure"
)

// Valid reports whether r is Success or Failure.
func (r Result) Valid() bool { return r == Success || r == Failure }
