package lockmw

import "errors"

var (
	// ErrLockFailed is wrapped, together with lockcore's cause, in the error
	// an invocation returns when the lock was neither acquired nor released
	// in time (outcome FAILED) and no Handlers.OnFailed fallback is set. Test
	// for it with errors.Is; errors.Is also matches the cause, such as
	// lockcore.ErrWaitTimeout.
	ErrLockFailed = errors.New("lockmw: lock failed")

	// ErrNoAnswer means another invocation published success but no
	// usable inline answer came with it: the answer was over the
	// maximum, could not be encoded, or could not be decoded. It is
	// returned, or passed to Handlers.OnFailed, only with inline answers
	// (Handlers.OnReleased nil).
	ErrNoAnswer = errors.New("lockmw: no inline answer")

	// ErrConfig is wrapped in every configuration error: one returned by
	// [New] or [NewHandlers], or returned on every call by a handler from
	// [Wrap] or [WrapHandlers].
	ErrConfig = errors.New("lockmw: invalid configuration")

	// ErrKey means the lock key could not be taken from the event: the key
	// function failed or returned a blank key. The handler did not run.
	ErrKey = errors.New("lockmw: no lock key")

	// ErrNoTimeLeft means the invocation's deadline has passed or is closer
	// than the safety margin, so the lock could not be held safely. The
	// handler did not run.
	ErrNoTimeLeft = errors.New("lockmw: no time left before the deadline")

	// ErrBadInput, wrapped in an error of Handlers.Fetch, says that the
	// event itself was bad (a client's malformed request) and the work was
	// not attempted. The lock is released without publishing a failure
	// (lockcore.WithKeepEpisode): nothing is shared with the key's other
	// invocations, no attempt of the failure episode is counted, and a
	// waiter takes the lock and runs its own handler. The invocation
	// returns the handler's error. Wrapped in a key function's error, it
	// makes the invocation's log line Warn instead of Error: the client's
	// fault, not the function's.
	ErrBadInput = errors.New("lockmw: bad input")

	// ErrNoAccount means no record account was configured with
	// [WithRecordAccount] and none could be read from the invoked function
	// ARN in the Lambda context. The handler did not run.
	ErrNoAccount = errors.New("lockmw: no record account")
)
