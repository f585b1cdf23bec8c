package lockmw

import (
	"errors"

	"github.com/herdlock/herdlock/lockcore"
)

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

	// ErrKey means the lock key could not be taken from the event: the key
	// function failed or returned a blank key. The handler did not run.
	ErrKey = errors.New("lockmw: no lock key")

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
)

// lockmw's errors that match a lockcore sentinel, so that one sentinel
// names one concept across the packages: a configuration error matches
// lockcore.ErrConfig (returned by [New] and [NewHandlers], or on every
// call by a handler of [Wrap] and [WrapHandlers] so configured); an
// invocation whose deadline has passed or is closer than the safety margin
// matches lockcore.ErrNoTimeLeft (the handler did not run).
var (
	errConfig     = &sentinel{"lockmw: invalid configuration", lockcore.ErrConfig}
	errNoTimeLeft = &sentinel{"lockmw: no time left before the deadline", lockcore.ErrNoTimeLeft}
)

// sentinel is an error of lockmw's own words that matches a lockcore
// sentinel.
type sentinel struct {
	msg string
	is  error
}

func (e *sentinel) Error() string { return e.msg }
func (e *sentinel) Unwrap() error { return e.is }
