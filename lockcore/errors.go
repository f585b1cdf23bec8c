package lockcore

import (
	"errors"
	"fmt"
	"time"
)

var (
	// ErrLeaseLost means the lock is no longer ours: another holder acquired
	// it, or our lease ran out before a renewal succeeded. It is the cause of
	// the holder's context when that happens.
	ErrLeaseLost = errors.New("lockcore: lease lost")

	// ErrMaxHoldReached means the hard maximum hold ran out. It is the cause
	// of the holder's context when that happens.
	ErrMaxHoldReached = errors.New("lockcore: maximum duration reached")

	// ErrAborted is the cause of the holder's context after TriggerAbort.
	ErrAborted = errors.New("lockcore: lock aborted")

	// ErrReleased is the cause of the holder's context after a release.
	ErrReleased = errors.New("lockcore: lock released")

	// ErrNotHeld is returned by Renew when the lock is not held.
	ErrNotHeld = errors.New("lockcore: lock not held")

	// ErrWaitTimeout means TryAcquireElseWaitForRelease waited as long as it
	// was allowed to and the lock was neither released nor acquired.
	ErrWaitTimeout = errors.New("lockcore: wait timed out")

	// ErrNoTimeLeft means the invocation has too little time left to hold
	// the lock at all.
	ErrNoTimeLeft = errors.New("lockcore: no time left to hold the lock")

	// ErrReleaseFailed means every release attempt failed; the lease will
	// lapse on its own.
	ErrReleaseFailed = errors.New("lockcore: release failed")

	// ErrHolderFailed is matched by every *[HolderFailedError]: the holders
	// of this burst failed, and waiting on would only repeat the failure.
	ErrHolderFailed = errors.New("lockcore: holder failed")

	// ErrStoreRefused is matched by a store error that proves the request
	// was not applied and that retrying it at once would not help: a
	// missing table, a denied permission, a request the store finds
	// invalid, unrecognised credentials (DynamoDB's 4xx other than a
	// failed condition, a write conflict, throttling, and an expired
	// token or signature, which the SDK renews for the next request). The
	// lock does not settle or retry it: the call fails at once, an acquire or a wait with an
	// *[AcquireError] of [ReasonStore]. The error names the store's error
	// code, not its message, which can name accounts and roles. A [storeapi.Store]
	// of another kind returns an error matching it for the same cases.
	ErrStoreRefused = errors.New("lockcore: refused by the store")

	// ErrConfig is matched by every configuration error of [New],
	// [NewDynamoStore] and [CheckStore]: a blank field, a nil store or
	// client (also a typed nil, such as the *DynamoStore of a
	// NewDynamoStore whose error was ignored), a blank table name, an
	// invalid option.
	ErrConfig = errors.New("lockcore: invalid configuration")
)

// configError marks err as a configuration error: it matches [ErrConfig]
// and keeps err's message.
type configError struct{ err error }

func (e *configError) Error() string        { return e.err.Error() }
func (e *configError) Unwrap() error        { return e.err }
func (e *configError) Is(target error) bool { return target == ErrConfig }

// HolderFailedError is returned by [Lock.TryAcquireElseWaitForRelease]
// (Outcome Failed) when the item shows a recent failure whose not-before
// time is later than the caller can wait: the upstream's pacing
// ([WithNotBefore]) or the hold-back of an episode that used up its
// attempts ([FailureEpisode]). It carries what the failing holder
// published, never raw error text.
type HolderFailedError struct {
	Reason string // the failing holder's reason code (see [WithFailureReason])
	// NotBefore is the earliest time at which a new attempt may start:
	// from then on this failure holds nobody back, so a caller that comes
	// back then is not refused by it. Never zero.
	NotBefore time.Time
	Attempts  int // failed attempts of the episode so far
}

func (e *HolderFailedError) Error() string {
	msg := fmt.Sprintf("lockcore: holder failed: %s after %d attempt(s)", e.Reason, e.Attempts)
	if !e.NotBefore.IsZero() {
		msg += ", retry after " + e.NotBefore.UTC().Format(time.RFC3339Nano)
	}
	return msg
}

// Is makes errors.Is(err, ErrHolderFailed) true.
func (e *HolderFailedError) Is(target error) bool { return target == ErrHolderFailed }

// Reason says why an acquisition failed, in an [AcquireError].
type Reason string

const (
	// ReasonStaleLock: the lock was held, but the stored item no longer
	// carries our revision.
	ReasonStaleLock Reason = "stale_lock"
	// ReasonNoLockItem: the store returned no item where one must exist.
	ReasonNoLockItem Reason = "no_lock_item"
	// ReasonStore: the store returned an error.
	ReasonStore Reason = "store_error"
	// ReasonNoTimeLeft: the invocation has too little time left.
	ReasonNoTimeLeft Reason = "no_time_left"
)

// AcquireError reports a failed acquisition that is not simply "somebody
// else holds it". Use errors.As to read Reason, and errors.Is or Unwrap to
// reach the cause.
type AcquireError struct {
	Reason   Reason
	Revision string // the revision concerned, when there is one
	Cause    error
}

func (e *AcquireError) Error() string {
	msg := "lockcore: acquire: " + string(e.Reason)
	if e.Revision != "" {
		msg += " (revision " + e.Revision + ")"
	}
	if e.Cause != nil {
		msg += ": " + e.Cause.Error()
	}
	return msg
}

func (e *AcquireError) Unwrap() error { return e.Cause }

// ErrThrottled is matched by a store error when the store throttled the
// request (DynamoDB's ProvisionedThroughputExceededException,
// ThrottlingException or RequestLimitExceeded). On a lock item it is
// evidence of a herd: a waiter keeps waiting and polls less often, a holder
// retries its renewal or release soon, and a wait that runs out of time
// while throttled ends with an error naming the throttling and the key.
var ErrThrottled = errors.New("lockcore: throttled")

// ReasonThrottled: the store throttled the acquire (see [ErrThrottled]).
const ReasonThrottled Reason = "throttled"
