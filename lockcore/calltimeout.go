package lockcore

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/herdlock/herdlock/lockcore/storeapi"
)

// Call timeouts follow the store's latency, as TCP's retransmission timer
// follows the round trips it measures (RFC 6298): every store call of a
// Lock (a poll, a renewal, a release, a settling read, a first read, an
// announcement) allows
//
//	clamp(SRTT + 4·RTTVAR, attempt timeout, ceiling)
//
// where SRTT and RTTVAR are the smoothed round trip and its mean deviation
// over the answers the store gave (gains 1/8 and 1/4). The bounds:
//
//   - never below the attempt timeout ([StoreCalls].AttemptTimeout), so a fast
//     store sees today's timeouts, and a store nobody measured yet too;
//   - a holder's renewal (or its check at the hard maximum) never above
//     the renewal interval, max(renewal floor, lease/3): a renewal sent on
//     schedule has its answer, or gives up, before the next one is due, so
//     a slow store that answers within the bound keeps the lease. Two
//     whole attempts do not fit in the validity the last applied renewal
//     left (lease − margin − interval < 2·interval): after a renewal that
//     got no answer, the next has lease − margin − 2·interval (1.88 s for
//     the default lease), and a store slower than that loses the lease to
//     one lost answer;
//   - every other call, which keeps no lease, never above the longer of
//     the renewal interval and 4× the attempt timeout (both 2 s by
//     default): a short lease does not keep a waiter from being served by
//     a table that answers within 4× the attempt timeout.
//
// A call that gets no answer within its timeout backs off, as TCP does:
// the next calls allow twice that timeout (within the bounds) until an
// answer comes; and it counts as a round trip of at least the time it
// waited, so one that waited longer than SRTT raises it. Karn's rule, as
// far as it applies here: only calls whose length says something are
// samples. An answer (an item, a refused condition) is one; a throttle, a
// failure, a refusal, or a call cut short by the caller's own deadline or
// cancellation is none, and leaves the estimate alone. A call that the
// store retried inside (DynamoStore retries a transient error once) is one
// round trip of its whole length: longer, never shorter, than one attempt.
//
// One estimate per store ([DynamoStore] and [MemoryStore] keep one, as
// they keep their [HotKeys]): the latency is the table's and the
// network's, the same for every key, and in Lambda the store lives as long
// as the execution environment, so an invocation starts with what the
// ones before it measured instead of paying a timeout to learn that the
// table is slow. A Lock on any other Store keeps its own.

// rttGranularity is the least deviation term, G of RFC 6298: a store that
// always answers in the same time still gets this much slack.
const rttGranularity = 10 * time.Millisecond

// maxBackoff caps a backed-off timeout before the Lock's bound applies, so
// that repeated doubling cannot overflow.
const maxBackoff = time.Minute

// latency is the round-trip estimate of one store. It is safe for
// concurrent use; the zero value has no samples.
type latency struct {
	mu      sync.Mutex    // guards the fields below
	samples int           // answers measured, saturating
	srtt    time.Duration // smoothed round trip
	rttvar  time.Duration // its mean deviation
	backoff time.Duration // since the last answer: the least timeout after a call got none (0: none)
}

// timeout returns the call timeout within [floor, ceiling].
func (e *latency) timeout(floor, ceiling time.Duration) time.Duration {
	e.mu.Lock()
	d := floor
	if e.samples > 0 {
		d = e.srtt + max(rttGranularity, 4*e.rttvar)
	}
	d = max(d, e.backoff)
	e.mu.Unlock()
	return min(max(d, floor), max(ceiling, floor))
}

// answered records a round trip of rtt: an answer ends any backoff.
func (e *latency) answered(rtt time.Duration) {
	e.mu.Lock()
	e.sample(rtt)
	e.backoff = 0
	e.mu.Unlock()
}

// timedOut records a call that waited waited, allowed allowed, and got no
// answer: a round trip of at least waited, and a backoff to twice allowed.
func (e *latency) timedOut(waited, allowed time.Duration) {
	e.mu.Lock()
	if e.samples == 0 || waited > e.srtt {
		e.sample(waited)
	}
	e.backoff = min(max(e.backoff, 2*allowed), maxBackoff)
	e.mu.Unlock()
}

// sample folds r into the estimate (RFC 6298, 2.2 and 2.3). e.mu is held.
func (e *latency) sample(r time.Duration) {
	if e.samples == 0 {
		e.srtt, e.rttvar = r, r/2
	} else {
		e.rttvar = (3*e.rttvar + (e.srtt - r).Abs()) / 4
		e.srtt = (7*e.srtt + r) / 8
	}
	e.samples = min(e.samples+1, 1<<20)
}

// latencyKept is a Store that keeps a latency estimate for the Locks on it.
type latencyKept interface {
	latency() *latency
}

// latencyOf returns store's estimate, or a new one when it keeps none.
func latencyOf(store storeapi.Store) *latency {
	if lk, ok := store.(latencyKept); ok {
		if e := lk.latency(); e != nil {
			return e
		}
	}
	return &latency{}
}

// callTimeout is what the next store call of l that keeps no lease may
// take (see above).
func (l *Lock) callTimeout() time.Duration {
	return l.rtt.timeout(l.o.attemptTimeout, max(l.renewInterval(), 4*l.o.attemptTimeout))
}

// renewTimeout is what the holder's next renewal (or check) may take.
func (l *Lock) renewTimeout() time.Duration {
	return l.rtt.timeout(l.o.attemptTimeout, l.renewInterval())
}

// timedCall runs one store call f with a context from parent that ends
// after the call timeout, or at by when that is earlier (zero: none), and
// teaches the estimate what the call showed.
func (l *Lock) timedCall(parent context.Context, by time.Time, f func(context.Context) error) error {
	return l.timedCallAllowing(parent, by, l.callTimeout(), f)
}

// timedCallAllowing is timedCall with the call allowed allowed.
func (l *Lock) timedCallAllowing(parent context.Context, by time.Time, allowed time.Duration, f func(context.Context) error) error {
	sent := time.Now()
	end := sent.Add(allowed)
	own := true // the call's end is the call timeout's, not the caller's
	if !by.IsZero() && by.Before(end) {
		end, own = by, false
	}
	if dl, ok := parent.Deadline(); ok && dl.Before(end) {
		own = false
	}
	ctx, cancel := context.WithDeadline(parent, end)
	err := f(ctx)
	cancel()
	l.learn(sent, allowed, own && parent.Err() == nil, err)
	return err
}

// learn teaches the estimate what a store call sent at sent showed: its
// round trip when it was answered, a backoff when it got no answer within
// allowed and own is true (its end was the call timeout's, not the
// caller's); nothing otherwise.
func (l *Lock) learn(sent time.Time, allowed time.Duration, own bool, err error) {
	var ce *storeapi.ConditionError
	switch {
	case err == nil || errors.As(err, &ce):
		l.rtt.answered(time.Since(sent))
	case own && isTimeout(err) && !isThrottled(err):
		l.rtt.timedOut(time.Since(sent), allowed)
	}
}
