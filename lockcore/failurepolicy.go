package lockcore

import "time"

// maxHoldBackShift bounds the doubling of the hold-back, so that the shift
// never overflows; the cap of [FailureEpisode].MaxHoldBack is reached long before.
const maxHoldBackShift = 30

// nextAttemptMs returns the not-before, in Unix epoch milliseconds, that the
// failure release of attempt n of an episode writes: the earliest time at
// which the episode's next attempt may start (see [FailureEpisode]).
//
//   - paced (notBefore after nowMs): notBefore, whatever n is;
//   - unpaced, n not a multiple of the maximum attempts: 0, the next
//     attempt may start at once;
//   - unpaced, n = k × the maximum attempts: the episode is exhausted,
//     and held back until nowMs + holdBack(k).
func (l *Lock) nextAttemptMs(n int64, notBefore time.Time, nowMs int64) int64 {
	if !notBefore.IsZero() && notBefore.UnixMilli() > nowMs {
		return notBefore.UnixMilli()
	}
	m := int64(l.o.maxAttempts)
	if n < 1 || n%m != 0 {
		return 0
	}
	return nowMs + l.holdBack(n/m).Milliseconds()
}

// holdBack returns the hold-back after the k-th exhausted episode in a row
// (from 1): the failure window doubled k-1 times, at most the maximum
// hold-back.
func (l *Lock) holdBack(k int64) time.Duration {
	w := l.failureWindow()
	shift := min(max(k-1, 0), maxHoldBackShift)
	if w > l.o.maxHoldBack>>shift {
		return l.o.maxHoldBack
	}
	return w << shift
}
