package lockmw

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/herdlock/herdlock/internal/waitoutcome"
	"github.com/herdlock/herdlock/lockcore"
)

// logFollowing is the debug line of a follower.
const logFollowing = "lockmw: waiting for the lock attempt of another invocation in this process"

// metricLockCoalesced is the metric (Count) of an invocation that shared
// another invocation's lock attempt in the same process: 1 when it was
// answered with that leader's published success and made no lock request
// of its own, 0 otherwise. metricLockCoalescedFallThrough (Count) is 1 when
// it waited for a leader that did not publish success and then tried the
// lock itself; metricLockCoalescedWait (Milliseconds) is how long it
// waited for the leader.
const (
	metricLockCoalesced            = "LockCoalesced"
	metricLockCoalescedFallThrough = "LockCoalescedFallThrough"
	metricLockCoalescedWait        = "LockCoalescedWaitDuration"
)

// coalescer lets the invocations of one wrapped handler that run at the
// same time in one process (Lambda Managed Instances run several) and want
// the same lock share one lock attempt: the first is the leader and runs
// the lock protocol; the others follow it, and get its outcome when it
// published success. It is safe for concurrent use.
type coalescer struct {
	mu      sync.Mutex // guards flights
	flights map[lockcore.Key]*flight
}

// flight is one leader's lock attempt, which followers wait on.
type flight struct {
	co   *coalescer
	key  lockcore.Key
	done chan struct{} // closed when the flight has landed

	// Guarded by co.mu.
	until   time.Time // when the leader's wait on the store ends
	holding bool      // the leader holds the lock: it lands the flight when the hold ends

	// Written by land before done is closed, read-only after.
	pub    publication
	shared bool // the leader saw success published: followers take pub
	// read: the leader had the lock item from the store (it held the
	// lock, or its wait timed out having read the item): a follower's own
	// wait that then reads nothing is not one that never had the item.
	read bool
}

// publication is what a leader saw published on the lock item: success,
// by itself or by another holder, with the fence of the holder that
// published it, its result reference, its inline answer, and, for another
// holder's, when it was published.
type publication struct {
	fence  int64
	ref    string
	answer []byte    // read-only: every follower takes a copy
	at     time.Time // another holder's success: when it published it; zero for the leader's own
	// firstRequest: the leader's first request found it (a fresh success),
	// without waiting for a holder.
	firstRequest bool
	// read, for a flight landed without success: the leader's wait
	// timed out having had the lock item (see flight.read).
	read bool
}

// takeableAt reports whether an invocation that began waiting at t may
// take p, as lockcore judges for a waiter on the store: the leader's own
// success, or another holder's published while it waited, or still fresh
// (within fresh, see lockcore.WithFreshSuccess) when it came, by the wall
// clock's milliseconds.
func (p publication) takeableAt(t time.Time, fresh time.Duration) bool {
	if p.at.IsZero() {
		return true
	}
	since := t.UnixMilli()
	if fresh > 0 {
		since -= fresh.Milliseconds()
	}
	return p.at.UnixMilli() >= since
}

// shortFollowerSlack is how much sooner than its leader's a follower's
// wait must end before it tries the lock itself (see join). Invocations
// that a burst starts together have deadlines a few milliseconds apart;
// without the slack, the ones whose deadline came a little sooner would
// each poll the store for the whole burst. The cost: a held-back failure
// whose not-before falls in the last second of the leader's wait reaches
// such a follower as a wait timeout at its own limit.
const shortFollowerSlack = time.Second

func newCoalescer() *coalescer {
	return &coalescer{flights: make(map[lockcore.Key]*flight)}
}

// join returns the flight for key and whether the caller, whose wait
// ends at until, leads it. A leader must land the flight, whatever
// happens (also on panic), or its followers wait until their own
// deadlines. It returns nil when the flight's leader waits on the store
// (holds nothing yet) more than shortFollowerSlack past until: a held-back
// failure that the leader waits out can be past the caller's limit, and a
// waiter on the store with that limit is told so at once, so the caller
// tries the lock itself.
func (co *coalescer) join(key lockcore.Key, until time.Time) (f *flight, leader bool) {
	co.mu.Lock()
	defer co.mu.Unlock()
	if f, ok := co.flights[key]; ok {
		if !f.holding && until.Before(f.until.Add(-shortFollowerSlack)) {
			return nil, false
		}
		return f, false
	}
	f = &flight{co: co, key: key, done: make(chan struct{}), until: until}
	co.flights[key] = f
	return f, true
}

// leaderHolds records that the leader holds the lock: from now on its outcome
// reaches every follower when it is decided.
func (f *flight) leaderHolds() {
	f.co.mu.Lock()
	defer f.co.mu.Unlock()
	f.holding = true
}

// undecided reports whether the leader is still in its lock attempt
// without holding the lock: its first request may still be on its way.
func (f *flight) undecided() bool {
	f.co.mu.Lock()
	defer f.co.mu.Unlock()
	return f.co.flights[f.key] == f && !f.holding
}

// land ends the flight: with shared, its followers get pub; without, they
// try the lock on their own. Later invocations of the key start a new
// flight. Only the first call has an effect.
func (f *flight) land(pub publication, shared bool) {
	f.co.mu.Lock()
	defer f.co.mu.Unlock()
	if f.co.flights[f.key] != f {
		return // landed already
	}
	delete(f.co.flights, f.key)
	f.pub, f.shared, f.read = pub, shared, pub.read || f.holding
	close(f.done)
}

// landedHavingRead reports whether the flight has landed with read set. A
// follower may fall through before the flight lands (its own wait ended
// first): read is written by land, and is read only once done is closed.
func (f *flight) landedHavingRead() bool {
	select {
	case <-f.done:
		return f.read
	default:
		return false
	}
}

// errFallThrough means the leader did not publish success: the follower
// tries the lock itself.
var errFallThrough = errors.New("lockmw: the coalesced leader did not publish success")

// wait blocks until the flight lands, ctx ends, or until passes (the zero
// time: no limit). It returns the leader's publication, errFallThrough
// when the leader published none, or an error matching
// [lockcore.ErrWaitTimeout] or ctx's cause.
func (f *flight) wait(ctx context.Context, until time.Time) (publication, error) {
	var limit <-chan time.Time
	if !until.IsZero() {
		d := time.Until(until)
		if d <= 0 {
			return publication{}, fmt.Errorf("%w: lock %s/%s: no time left to wait for the in-process holder", lockcore.ErrWaitTimeout, f.key.Group, f.key.ID)
		}
		t := time.NewTimer(d)
		defer t.Stop()
		limit = t.C
	}
	select {
	case <-f.done:
		if !f.shared {
			return publication{}, errFallThrough
		}
		return f.pub, nil
	case <-ctx.Done():
		return publication{}, fmt.Errorf("lockmw: waiting for the in-process holder: %w", context.Cause(ctx))
	case <-limit:
		return publication{}, fmt.Errorf("%w: lock %s/%s: waiting for the in-process holder", lockcore.ErrWaitTimeout, f.key.Group, f.key.ID)
	}
}

// WithoutCoalescing turns in-process coalescing off: every invocation
// tries the lock on its own. Default: on, as follows.
//
// Invocations of the wrapped handler that run at the same time in
// one process (AWS_LAMBDA_MAX_CONCURRENCY above 1, as on Lambda Managed
// Instances) and want the same lock share one lock attempt: the first, the
// leader, runs the lock protocol on the store; the others wait for it in
// the process, each until its own deadline less the safety margin and at
// most the lock's maximum wait (lockcore.WithMaxWait), as a waiter on the
// store would, and make no lock request of their own. When the leader
// publishes success, or finds another holder's success published, they
// are RELEASED with that holder's fence, result reference and answer, and
// [Handlers].OnReleased runs for them as for any waiter; [Info].Coalesced
// is true. When the leader does not (its handler failed, it ran out of
// time, the store failed, it panicked), or its hold ends while its
// handler still runs (it lost its lease, reached its maximum hold, or its
// context ended), they try the lock on their own at that moment, as a
// waiter on the store that had waited as long: until their own deadline
// less the margin, with what is left of the maximum wait; so they can be
// RELEASED by another holder's success, acquire, or be told of a failure.
// An invocation whose wait would end before that of a leader still
// waiting on the store (not holding the lock) tries the lock on its own
// from the start, so that a failure held back past its limit is told to
// it at once; one whose wait ends before its leader's first request is
// answered (a short maximum wait) makes its own, which decides, as a
// waiter's first request does. A follower takes another holder's success
// that its leader found only if a waiter on the store coming when it came
// would: published while it waited, or fresh then
// (lockcore.WithFreshSuccess). A follower's wait counts in lockcore's metrics as a wait
// does; one that ran out is a wait timeout ([lockcore.ErrWaitTimeout],
// LockAcquisitionWaitTimeout 1). With one invocation per process, it
// changes nothing.
func WithoutCoalescing() Option {
	return func(o *options) { o.noCoalesce = true }
}

// attempt is the invocation's lock attempt: its own, or a share of the
// leader's in the process.
// It returns the lock it tried: lock, or, for a follower that tried the
// lock itself, one like it that waits only what is left of its maximum
// wait.
func (w *wrapper[TIn, TOut]) attempt(c *call, lock *lockcore.Lock) (*lockcore.Lock, lockcore.WaitResult, error) {
	if w.co == nil {
		res, err := c.acquire(lock)
		return lock, res, err
	}
	start := time.Now()
	until := c.waitUntil(start, w.margin, lock.MaxWait())
	f, leader := w.co.join(c.info.Key, until)
	switch {
	case f == nil:
		c.rec.AddMetric(metricLockCoalesced, "Count", 0)
		res, err := c.acquire(lock)
		return lock, res, err
	case leader:
		c.rec.AddMetric(metricLockCoalesced, "Count", 0)
		c.flight = f
		res, err := c.acquire(lock)
		switch res.Outcome {
		case lockcore.Acquired:
			f.leaderHolds() // the release, or the end of the hold, lands the flight
		case lockcore.Released:
			// A copy: the leader's answer, which the codec may decode to
			// these bytes, is its caller's once returned.
			c.landFlight(true, publication{fence: res.Fence, ref: res.ResultRef, answer: bytes.Clone(res.Answer), at: res.ReleasedAt,
				firstRequest: res.Polls == 0 && res.Waited == 0})
		case lockcore.Failed:
			c.landFlight(false, publication{read: errors.Is(err, lockcore.ErrWaitTimeout) && !errors.Is(err, waitoutcome.ErrItemUnread)})
		}
		return lock, res, err
	}
	res, err := c.follow(f, start, until, w.margin, lock.FreshSuccess())
	if !errors.Is(err, errFallThrough) {
		return lock, res, err
	}
	// As a waiter on the store that has waited as long: the maximum wait
	// counts from the invocation's start of waiting, not from the landing,
	// and so do its wait's metrics and Info.Waited.
	waited := time.Since(start)
	lock, fm := w.followerLock(c, lock, lock.MaxWait()-waited, waited)
	res, err = c.acquire(lock)
	if f.landedHavingRead() {
		err = waitoutcome.Read(err) // the process had the item: see flight.read
	}
	res.Waited += waited
	c.info.Waited = res.Waited
	fm.countWait()
	return lock, res, err
}

// followerLock is a lock like lock for a follower that waited for its
// leader for waited and then tries the lock itself: its wait ends within
// d, at least a nanosecond (its first attempt is made, and decides), and
// its metrics count the wait from when the follower began waiting.
func (w *wrapper[TIn, TOut]) followerLock(c *call, lock *lockcore.Lock, d, waited time.Duration) (*lockcore.Lock, *followerMetrics) {
	fm := &followerMetrics{rec: c.rec, before: waited}
	opts := append(w.lockOptions(c), lockcore.WithMaxWait(max(min(d, lock.MaxWait()), time.Nanosecond)), lockcore.WithMetrics(fm))
	l, err := lockcore.New(w.store, c.params, opts...)
	if err != nil {
		return lock, &followerMetrics{} // not expected: lockcore accepted the same settings for lock
	}
	return l, fm
}

// followerMetrics are the lock metrics of a follower's own attempt, after
// its wait for the leader (before): the attempt's wait counts from when
// the follower began waiting, and an attempt that its first request
// decided still counts as a wait, as a waiter on the store that waited as
// long counts it. It is safe for concurrent use (renewal writes to it).
type followerMetrics struct {
	rec    lockcore.Metrics // nil: count nothing
	before time.Duration

	mu   sync.Mutex
	seen map[string]bool // the wait metrics the attempt wrote
}

// AddMetric is rec's, with the wait metrics counted from the follower's
// start of waiting.
func (m *followerMetrics) AddMetric(name, unit string, v float64) {
	switch name {
	case "LockAcquisitionSuccess":
		v = 0 // it did not acquire at its first attempt: it waited first
	case "WaitForLock":
		v = 1
	case "LockAcquisitionWaitDuration":
		v += float64(m.before) / float64(time.Millisecond)
	}
	m.mu.Lock()
	if m.seen == nil {
		m.seen = make(map[string]bool)
	}
	m.seen[name] = true
	m.mu.Unlock()
	m.rec.AddMetric(name, unit, v)
}

// countWait adds the wait metrics the attempt did not write, its first
// request having decided: the follower waited nonetheless.
func (m *followerMetrics) countWait() {
	if m.rec == nil {
		return
	}
	for _, mt := range []struct {
		name, unit string
		v          float64
	}{
		{"WaitForLock", "Count", 1},
		{"LockAcquisitionWaitDuration", "Milliseconds", 0}, // AddMetric adds the wait for the leader
		{"LockPollCount", "Count", 0},
		{"LockAcquisitionWaitTimeout", "Count", 0},
		{"LockSharedFailure", "Count", 0},
	} {
		m.mu.Lock()
		seen := m.seen[mt.name]
		m.mu.Unlock()
		if !seen {
			m.AddMetric(mt.name, mt.unit, mt.v)
		}
	}
}

// waitUntil is when a wait of the invocation that starts at start ends,
// as lockcore computes it: at the invocation's deadline less margin, and
// at most maxWait after start.
func (c *call) waitUntil(start time.Time, margin, maxWait time.Duration) time.Time {
	until := start.Add(maxWait)
	if c.hasDL {
		until = minTime(until, c.deadline.Add(-margin))
	}
	return until
}

// timeLeftBy reports whether the invocation has time for a lock request
// at now: its deadline is more than margin away.
func (c *call) timeLeftBy(now time.Time, margin time.Duration) bool {
	return !c.hasDL || c.deadline.Sub(now) > margin
}

// follow waits for the leader of f, as a waiter on the store would: from
// start until until (see waitUntil). With the leader's published success
// it fills c.info as RELEASED, unless that success was another holder's
// that was old news when the invocation came (fresh is the lock's
// fresh-success window); with errFallThrough the caller tries the lock
// itself: the leader published nothing, or the follower's wait ended while
// the leader's first request was unanswered and the follower has time for
// one of its own (its deadline more than margin away).
func (c *call) follow(f *flight, start, until time.Time, margin, fresh time.Duration) (lockcore.WaitResult, error) {
	c.log.DebugContext(c.tctx, logFollowing)
	pub, err := f.wait(c.tctx, until)
	if errors.Is(err, lockcore.ErrWaitTimeout) && f.undecided() && c.timeLeftBy(time.Now(), margin) {
		// A waiter on the store gets the answer of its own first request
		// however short its maximum wait: the follower, whose wait ended
		// before its leader's first request was answered, makes one.
		err = errFallThrough
	}
	if err == nil && !pub.takeableAt(start, fresh) {
		// Old news when the invocation came: a waiter on the store coming
		// then would have found the lock free; so does the follower.
		err = errFallThrough
	}
	waited := time.Since(start)
	c.rec.AddMetric(metricLockCoalescedWait, "Milliseconds", float64(waited)/float64(time.Millisecond))
	if errors.Is(err, errFallThrough) {
		c.rec.AddMetric(metricLockCoalesced, "Count", 0)
		c.rec.AddMetric(metricLockCoalescedFallThrough, "Count", 1)
		return lockcore.WaitResult{}, err
	}
	c.rec.AddMetric(metricLockCoalesced, "Count", boolCount(err == nil))
	c.rec.AddMetric(metricLockCoalescedFallThrough, "Count", 0)
	if err == nil && pub.firstRequest {
		// Answered by the leader's first request, as a waiter on the store
		// by its own: no holder was waited for.
		waited = 0
		c.firstRequestMetrics()
	} else {
		c.waitMetrics(waited, err)
	}
	c.info.Waited = waited
	if err != nil {
		c.info.Outcome = lockcore.Failed
		if errors.Is(err, lockcore.ErrWaitTimeout) {
			c.logWaitTimeout(waited)
		}
		if c.tr != nil {
			c.tr.set(slog.String(attrOutcome, lockcore.Failed.String()))
		}
		return lockcore.WaitResult{Outcome: lockcore.Failed, Waited: waited}, err
	}
	// Its own copy of the answer, as a waiter on the store reads its own:
	// a Codec may return the bytes it decodes, and a caller change them.
	res := lockcore.WaitResult{Outcome: lockcore.Released, Fence: pub.fence, ResultRef: pub.ref, Answer: bytes.Clone(pub.answer), Waited: waited}
	c.info.Outcome, c.info.Fence, c.info.ResultRef = res.Outcome, res.Fence, res.ResultRef
	c.info.Coalesced = true
	if c.tr != nil {
		c.tr.set(slog.String(attrOutcome, res.Outcome.String()), slog.Int64(attrFence, res.Fence), slog.Bool(attrCoalesced, true))
	}
	return res, nil
}

// waitMetrics are the lock metrics lockcore writes when a wait ends after
// waited with err, for a follower, which made no lock request and no
// poll: a wait timeout reads as one on the stack's alarms and dashboards,
// whether the invocation waited on the store or in the process.
func (c *call) waitMetrics(waited time.Duration, err error) {
	c.rec.AddMetric("LockAcquisitionSuccess", "Count", 0)
	c.rec.AddMetric("WaitForLock", "Count", 1)
	c.rec.AddMetric("LockAcquisitionWaitDuration", "Milliseconds", float64(waited)/float64(time.Millisecond))
	c.rec.AddMetric("LockPollCount", "Count", 0)
	c.rec.AddMetric("LockAcquisitionFailed", "Count", boolCount(err != nil))
	c.rec.AddMetric("LockAcquisitionWaitTimeout", "Count", boolCount(errors.Is(err, lockcore.ErrWaitTimeout)))
	c.rec.AddMetric("LockAcquisitionError", "Count", 0)
	c.rec.AddMetric("LockSharedFailure", "Count", boolCount(errors.Is(err, lockcore.ErrHolderFailed)))
}

// firstRequestMetrics are the lock metrics lockcore writes when the first
// request of an attempt finds a fresh success: no wait.
func (c *call) firstRequestMetrics() {
	for _, name := range []string{"LockAcquisitionSuccess", "LockAcquisitionFailed",
		"LockAcquisitionError", "LockAcquisitionWaitTimeout", "WaitForLock",
		"LockSharedFailure"} {
		c.rec.AddMetric(name, "Count", 0)
	}
}

// logWaitTimeout writes the line lockcore writes for a wait that timed
// out, for a follower's: a log query for wait timeouts finds both.
func (c *call) logWaitTimeout(waited time.Duration) {
	c.lockLog.LogAttrs(c.tctx, slog.LevelWarn, "lock wait timed out",
		slog.String("lockGroup", c.info.Key.Group), slog.String("lockId", c.info.Key.ID),
		slog.Int("polls", 0), slog.Duration("waited", waited), slog.Int("throttled", 0), slog.Int("timedOut", 0))
}

// landWhenHoldEnds lands the flight the invocation leads, with no
// publication, as soon as its hold ends by itself (lease lost, maximum
// hold reached, the invocation's context ended) while its handler still
// runs: the followers go to the lock themselves, as waiters on the store
// would, instead of waiting for a handler that no longer holds the lock.
// A release lands the flight itself, with what it published. The caller
// calls stop once the handler has returned.
func (c *call) landWhenHoldEnds(lctx context.Context) (stop func() bool) {
	f := c.flight
	if f == nil {
		return func() bool { return false }
	}
	return context.AfterFunc(lctx, func() {
		if !errors.Is(context.Cause(lctx), lockcore.ErrReleased) {
			f.land(publication{}, false)
		}
	})
}

// landFlight lands the flight the invocation leads, if it leads one that
// has not landed.
func (c *call) landFlight(shared bool, pub publication) {
	if c.flight != nil {
		c.flight.land(pub, shared)
	}
}

func boolCount(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}
