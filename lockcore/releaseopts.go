package lockcore

import (
	"fmt"
	"time"

	"github.com/herdlock/herdlock/lockcore/storeapi"
)

// ReleaseOption qualifies one [Lock.Release].
type ReleaseOption func(*releaseOptions)

type releaseOptions struct {
	answer      []byte
	notBefore   time.Time
	reason      string
	keepEpisode bool
}

// WithAnswer publishes b, the holder's answer, in the lock item with a
// [Success] release, in the same conditional write: a waiter that sees the
// success gets it in [WaitResult].Answer without reading anything else.
// lockcore stores the bytes as they are (attribute [storeapi.AttrAnswer], type B). An
// answer longer than [MaxAnswerBytes] makes Release return an error matching
// [ErrAnswerTooLarge] before writing anything, and an answer with [Failure]
// is an error too; the lock is then still held. Default: no answer; an
// empty b is none.
func WithAnswer(b []byte) ReleaseOption { return func(o *releaseOptions) { o.answer = b } }

// WithNotBefore says, with a [Failure] release, that nobody may take over
// before t (from an upstream's Retry-After, say): waiters and newcomers
// wait until then, or end Failed with an error matching [ErrHolderFailed]
// when they cannot wait that long, and the first of them after t makes
// the episode's next attempt. Such a paced failure does not count against
// [FailureEpisode]. A t not after the release counts as none. It is
// ignored with [Success]. Default: no not-before; the failure is unpaced
// and the attempt bound of [FailureEpisode] applies.
func WithNotBefore(t time.Time) ReleaseOption { return func(o *releaseOptions) { o.notBefore = t } }

// WithFailureReason sets the short reason code published with a [Failure]
// release, which waiters read in [HolderFailedError].Reason. A code must
// match [a-z0-9_.-]{1,64}; anything else (raw error text, which may hold
// URLs, tokens or payload) is replaced by "unspecified", and so is
// [storeapi.OperatorReleaseReason], which only an operator's force-release
// publishes. It is ignored with [Success]. Default "unspecified".
func WithFailureReason(code string) ReleaseOption {
	return func(o *releaseOptions) { o.reason = code }
}

// WithKeepEpisode says, with a [Failure] release, that the hold made no
// attempt at the work (the holder's input was bad: a client's malformed
// request): the release frees the lock and leaves the item's failure
// episode as it was, so no attempt is counted and no reason or
// not-before is published (the store's [storeapi.ReleaseRequest].KeepEpisode).
// Waiters race for the lock as after any release that published no
// success. It is ignored with [Success]. Default: off.
func WithKeepEpisode() ReleaseOption { return func(o *releaseOptions) { o.keepEpisode = true } }

// reasonUnspecified is the published reason when none, or an unsafe one, was
// given.
const reasonUnspecified = "unspecified"

// Reason codes of the releases the lock makes by itself.
const (
	reasonLeaseLost    = "lease_lost"
	reasonMaxHold      = "max_hold"
	reasonAborted      = "aborted"
	reasonContextEnded = "context_ended"
)

// safeReason returns code when it matches [a-z0-9_.-]{1,64} and is not
// the operator's, and "unspecified" otherwise.
func safeReason(code string) string {
	if len(code) == 0 || len(code) > 64 || code == storeapi.OperatorReleaseReason {
		return reasonUnspecified
	}
	for i := 0; i < len(code); i++ {
		c := code[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-') {
			return reasonUnspecified
		}
	}
	return code
}

// releaseOptionsOf applies opts and checks them against result.
func releaseOptionsOf(result Result, opts []ReleaseOption) (releaseOptions, error) {
	var o releaseOptions
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	switch {
	case len(o.answer) > MaxAnswerBytes:
		return o, fmt.Errorf("lockcore: release: %w: %d bytes, the maximum is %d", ErrAnswerTooLarge, len(o.answer), MaxAnswerBytes)
	case len(o.answer) > 0 && result != Success:
		return o, fmt.Errorf("lockcore: release: an answer is published only with %q, not %q", Success, result)
	}
	return o, nil
}

// releaseRequest returns the ReleaseRequest that publishes result for h with these
// options, at nowMs.
func (l *Lock) releaseRequest(h *hold, result Result, ref string, o releaseOptions, nowMs int64) storeapi.ReleaseRequest {
	req := storeapi.ReleaseRequest{Key: l.key, Revision: h.revision, NowMs: nowMs, Result: result, ResultRef: ref}
	req.HoldMeanMs, req.HoldDevMs = nextHoldHistory(h.holdMean, h.holdDev, time.Since(h.start))
	if result == Success {
		req.Answer = o.answer
		return req
	}
	if o.keepEpisode {
		req.KeepEpisode = true
		return req
	}
	req.Failures = h.attempt
	req.NotBeforeMs = l.nextAttemptMs(h.attempt, o.notBefore, nowMs)
	req.FailReason = safeReason(o.reason)
	req.FailRecentUntilMs = max(req.NotBeforeMs, nowMs) + l.failureWindow().Milliseconds()
	return req
}

// failureWindow returns how long a failure counts as recent.
func (l *Lock) failureWindow() time.Duration {
	if l.o.failureWindow > 0 {
		return l.o.failureWindow
	}
	return l.o.lease
}

// reasonFor returns the reason code of a release the lock makes by itself
// because of cause.
func reasonFor(cause error) string {
	switch cause {
	case ErrLeaseLost:
		return reasonLeaseLost
	case ErrMaxHoldReached:
		return reasonMaxHold
	case ErrAborted:
		return reasonAborted
	default:
		return reasonContextEnded
	}
}
