package lockcore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/herdlock/herdlock/internal/waitoutcome"
	"github.com/herdlock/herdlock/lockcore/storeapi"
)

// Outcome is the result of [Lock.TryAcquireElseWaitForRelease].
type Outcome int

const (
	// Failed: the lock was neither acquired nor released in time, or the
	// store failed. The error says which.
	Failed Outcome = iota
	// Acquired: this Lock holds the lock and should do the work, then
	// Release with its result.
	Acquired
	// Released: another holder finished and published success; read what
	// it stored instead of doing the work again.
	Released
)

func (o Outcome) String() string {
	switch o {
	case Acquired:
		return "ACQUIRED"
	case Released:
		return "RELEASED"
	default:
		return "FAILED"
	}
}

// WaitResult describes how TryAcquireElseWaitForRelease ended.
type WaitResult struct {
	Outcome Outcome
	// TookOver is true when a waiter Acquired an abandoned lease: its
	// holder crashed, timed out or stopped renewing, and never released.
	TookOver bool
	// AfterFailure is true when the lock was Acquired after its previous
	// holder released it as a [Failure]: the attempt after a published
	// failure that the protocol intends (see [FailureEpisode]), not a
	// take-over.
	AfterFailure bool
	// Fence is our fencing token when Acquired, and the fence of the holder
	// that published the result when Released.
	Fence int64
	// ResultRef is the reference the holder published, when Released.
	ResultRef string
	// Answer is the answer the holder published with [WithAnswer], when
	// Released by the release that published this success; nil otherwise.
	Answer []byte
	// Announced is true when Released learned the success from a release
	// announcement (see [storeapi.Announcer]) rather than from the lock item.
	Announced bool
	// ReleasedAt is when the holder published the success, by its host's
	// wall clock (milliseconds), when Released; the zero time otherwise, or
	// when the item does not say.
	ReleasedAt time.Time
	// Polls is how many times the item was read while waiting.
	Polls int
	// Waited is how long the wait took, 0 when the first attempt decided.
	Waited time.Duration
}

// TryAcquireElseWaitForRelease tries to acquire the lock; if another holder
// has it, it waits until that holder publishes its result, and does not
// acquire it then: the point is that one invocation fetches and the others
// read what it stored.
//
//   - Acquired at once, after a published failure (WaitResult.
//     AfterFailure), or by taking over an abandoned lease (WaitResult.
//     TookOver): do the work, then Release.
//   - Released: the holder published success; read its result.
//   - Failed: the wait reached the maximum wait, ctx's deadline or
//     Params.RemainingTime, ctx ended, the store failed, or the holders of
//     this burst failed. err says which: it matches [ErrWaitTimeout],
//     ctx's cause, is an *[AcquireError], or is a *[HolderFailedError].
//
// A recent failure (see [FailureEpisode].Window) is shared: nobody takes over
// before its not-before time, the upstream's pacing ([WithNotBefore]) or
// the hold-back of an episode that used up its attempts
// ([FailureEpisode]); a waiter whose deadline allows it sleeps until then,
// without reading, and then races the others for the lock. When the
// not-before is later than the deadline, the wait ends at once with a
// *[HolderFailedError] carrying the published reason, the attempt count
// and that not-before, the time at which a new attempt may start.
//
// An acquire whose outcome is unknown (its answer lost, a 5xx, a timeout)
// may still have been applied: it is settled by consistent reads, retried
// with capped backoff while the store fails or answers too slowly (a
// brownout) until the limit, and then either held (our own write), waited
// on (another holder's), or freed with a release when we may not hold it
// or it stayed unknown, so that no applied acquire is left held by nobody.
// The first read and the release have budgets of their own (up to a
// second, or the call timeout when longer, and the release timeout,
// within ctx's deadline): the call may return that much after the limit.
//
// A request the store refused as not applied (a missing table, a denied
// permission: see [ErrStoreRefused]) ends the call at once, Failed with an
// *[AcquireError] of [ReasonStore]; nothing is settled or retried. A store
// that answers slowly is waited on: every call allows the latency the
// store shows (see [StoreCalls].AttemptTimeout), and a first read that gets no
// answer in time leads to waiting, as a throttled one does, not to a write.
//
// A throttled first acquire or poll is not a failure: the store throttles
// when a herd fills the item's capacity, so the invocation waits, polling
// less often while throttled; if the wait runs out meanwhile, err matches
// both [ErrWaitTimeout] and [ErrThrottled] and names the key.
//
// Only the first request of a wait may be a write that a read would have
// answered: every later try reads the item first and writes only when the
// read shows the lock acquirable (absent, released and not held back, or
// abandoned). The first request is a strongly consistent read, so that a
// herd's invocations, each in an environment whose earlier calls were on
// other keys, spend a read, not a write, to learn that the lock is held or
// that its success is published; it is the conditional write (one request
// when uncontended) on a key this store acquired at once within the lease
// or the fresh-success window (see [HotKeys]), unless [Herd].ReadFirst.
//
// An abandoned lock is never reported as Released: waiters race one
// conditional write and exactly one of them acquires it. Waiters read with
// strongly consistent reads every poll interval (±20% jitter); nothing about
// earlier waiters slows them down.
func (l *Lock) TryAcquireElseWaitForRelease(ctx context.Context) (res WaitResult, err error) {
	// limit is when the invocation stops waiting for anything: ctx's
	// deadline or Params.RemainingTime. deadline adds the maximum wait.
	start, startMs := time.Now(), l.nowMs()
	var limit time.Time
	if dl, ok := ctx.Deadline(); ok {
		limit = dl
	}
	if l.remaining != nil {
		limit = minTime(limit, start.Add(l.remaining()))
	}
	deadline := minTime(limit, start.Add(l.o.maxWait))

	if h := l.current(); h != nil {
		// Already ours: confirm it is not stale, as Acquire does.
		if ok, err := l.Acquire(ctx); !ok {
			return WaitResult{Outcome: Failed}, err
		}
		return WaitResult{Outcome: Acquired, Fence: h.fence, TookOver: h.tookOver, AfterFailure: h.afterFailure}, nil
	}
	step, cur, err := stepAcquire, (*storeapi.Item)(nil), error(nil)
	var looked *storeapi.Item // the item as the first read showed it, if any
	if l.readsFirst() {
		step, cur, err = l.readFirst(ctx, limit)
		looked = cur
		if step != stepAcquire {
			l.markHot()
		}
		if isRefusal(err) {
			return l.refused(err)
		}
	}
	var tried tries // the wait's attempts that did not acquire (see ownattempt.go)
	if step == stepAcquire {
		var acquired bool
		acquired, cur, err = l.acquire(ctx, attempt{until: limit, herd: true, newsSinceMs: startMs + 1, tried: &tried})
		switch {
		case isRefusal(err):
			return l.refused(err)
		case err != nil && !isThrottled(err):
			l.giveUp(&tried) // a copy of it may land yet (see lostattempt.go)
			l.count(metricLockAcquisitionError, 1)
			l.count(metricLockAcquisitionFailed, 1)
			return WaitResult{Outcome: Failed}, err
		case acquired:
			if !acquiredAfterFailure(*cur) {
				l.markCold()
			}
			l.count(metricLockAcquisitionFailed, 0)
			l.count(metricLockAcquisitionSuccess, 1)
			l.count(metricLockAcquisitionError, 0)
			return WaitResult{Outcome: Acquired, Fence: cur.Fence, AfterFailure: acquiredAfterFailure(*cur)}, nil
		case cur != nil && cur.Released && cur.Result == Success && (l.freshSuccess(*cur) || cur.ReleasedAtMs > startMs):
			step = stepReleased // fresh (see WithFreshSuccess), or published after the call began: the write did not take it
		case cur != nil && cur.Released && cur.Result == Success:
			// An old success, which a settling read showed after an
			// unknown outcome: the lock is free. The wait reads it again
			// and takes it, unless the success was published while it
			// waited.
			step = stepWait
		case cur != nil || err != nil: // refused over a holder or a held-back failure, or throttled
			step = stepWait
		}
		if step != stepAcquire {
			l.markHot()
		}
	}
	l.count(metricLockAcquisitionSuccess, 0)
	if step == stepReleased {
		l.giveUp(&tried) // refused over the success: a copy of it may land yet
		l.count(metricLockAcquisitionFailed, 0)
		l.count(metricLockAcquisitionError, 0)
		l.count(metricLockAcquisitionWaitTimeout, 0)
		l.count(metricWaitForLock, 0)
		l.count(metricSharedFailure, 0)
		return releasedResult(*cur), nil
	}

	callCtx, cancel := context.WithDeadline(ctx, deadline) // every read ends by the deadline
	defer cancel()
	w := &waiter{l: l, ctx: ctx, callCtx: callCtx, deadline: deadline, start: time.Now(), startMs: l.nowMs(), tried: tried}
	if l.ann != nil {
		w.shard = rand.IntN(l.o.announceShards)
	}
	switch {
	case isThrottled(err): // a herd is on the item, and its holder may be about to publish
		w.lastErr, w.throttles = err, 1
	case err != nil: // the first read got no answer in time
		w.note(err)
	}
	w.saw(looked)
	w.saw(cur)
	defer func() {
		w.giveUpTries() // a copy of one may land yet (see lostattempt.go)
		res.Polls, res.Waited = w.polls, time.Since(w.start)
		l.count(metricWaitForLock, 1)
		l.millis(metricLockAcquisitionWaitDuration, res.Waited)
		l.count(metricLockPollCount, float64(w.polls))
		l.count(metricLockAcquisitionFailed, boolMetric(res.Outcome == Failed))
		l.count(metricLockAcquisitionWaitTimeout, boolMetric(errors.Is(err, ErrWaitTimeout)))
		var ae *AcquireError
		l.count(metricLockAcquisitionError, boolMetric(errors.As(err, &ae)))
		l.count(metricSharedFailure, boolMetric(errors.Is(err, ErrHolderFailed)))
	}()
	return w.run(cur)
}

// waiter is the state of one wait.
type waiter struct {
	l        *Lock
	ctx      context.Context // the holder's context derives from it
	callCtx  context.Context // store calls: ctx, ending at deadline
	deadline time.Time
	start    time.Time
	polls    int

	tried tries // this wait's attempts that did not acquire (one may land late), and the last write it freed

	obs      *storeapi.Observation // what we last saw; nil when the item was absent or released
	obsAt    time.Time             // monotonic: when obs was first seen
	obsLease time.Duration
	lastErr  error

	throttles int // store calls of this wait that were throttled
	timeouts  int // store calls of this wait cut short by its own deadline or attempt timeout
	pace      int // throttled polls in a row: each doubles the interval, up to 2^maxPaceShift

	pred    prediction // when the holder of revision predRev should be done (see predict.go)
	predRev string     // "" when there is no prediction
	dense   int        // reads of the prediction's schedule already scheduled or dropped (see predicted)
	floorAt time.Time  // monotonic: the ordinary pace's next read, which reads added by a prediction do not move (see next)
	added   bool       // the next read is one the prediction added (see next), not the pace's
	reading bool       // added, for the read poll made last

	// addedThrottles: of the throttled calls, reads that a prediction
	// added, which neither make the wait crowded nor stretch the pace (see
	// poll).
	addedThrottles int

	// Announcements (see announce.go), once the store throttled this wait.
	startMs  int64 // wall clock when the wait began
	minFence int64 // the highest fence seen holding the lock: an announced success must be at least this
	// seen is true once the wait has read the lock item (or had it back
	// from a refused write); seenFence is the highest fence it then had.
	// A success at a higher fence was published during the wait.
	seen      bool
	seenFence int64
	// holderFence is seenFence without the writes the wait knows were held
	// by nobody (late copies: see nobodys): an announced success below it
	// is stale news (see accepts); one below a copy's fence only is not.
	holderFence int64
	shard       int   // this waiter's announcement shard
	turn        int   // polls since the wait became crowded: every annItemEvery-th reads the lock item
	itemTurn    int   // the turn that last read the lock item (see announcementTurn)
	annFence    int64 // the highest fence the shard showed
	needItem    bool  // the next poll reads the lock item (an announced answer was left out)
	annPace     int   // throttled shard reads in a row (pace is the lock item's)
}

func (w *waiter) run(cur *storeapi.Item) (WaitResult, error) {
	l := w.l
	w.observe(cur)
	wake, res, err, done := w.afterRefusal(cur)
	if done {
		return res, err
	}
	if cur != nil {
		if v, mine := w.own(*cur); mine { // a late copy of an acquire a call gave up on
			if v.done {
				return v.res, v.err
			}
			wake = time.Now() // freed (or the store failed): read again
		}
	}
	for {
		now := time.Now()
		if !now.Before(w.deadline) {
			return w.timedOut(now)
		}
		if err := sleepCtx(w.ctx, min(wake.Sub(now), w.deadline.Sub(now))); err != nil {
			return WaitResult{Outcome: Failed}, fmt.Errorf("lockcore: wait: %w", err)
		}
		if w.announcementTurn() {
			if res, done := w.pollAnnouncement(); done {
				return res, nil
			}
			wake = w.next(time.Now())
			continue
		}
		it, found, err := w.poll()
		wake = w.next(time.Now()) // after poll, which keeps the pace
		if isRefusal(err) {
			return WaitResult{Outcome: Failed}, &AcquireError{Reason: ReasonStore, Cause: err}
		}
		if err != nil {
			continue
		}
		v := w.judge(it, found)
		switch {
		case v.done:
			return v.res, v.err
		case !v.wake.IsZero():
			wake, w.added = v.wake, false
			continue
		case !v.take:
			continue
		}
		l.count(metricLockNotReleased, 1)
		acquired, cur, err := l.acquire(w.ctx, attempt{until: w.deadline, observed: v.observed, takeover: true, herd: true,
			newsSinceMs: w.newsSinceMs(), tried: &w.tried})
		var ae *AcquireError
		switch {
		case errors.As(err, &ae) && ae.Reason == ReasonNoTimeLeft, isRefusal(err):
			return WaitResult{Outcome: Failed}, err
		case err != nil:
			w.note(err)
			if isThrottled(err) {
				w.throttles++
			}
		case acquired:
			took, after := kind(*cur, true, w.tried.freed)
			return WaitResult{Outcome: Acquired, TookOver: took, AfterFailure: after, Fence: cur.Fence}, nil
		default:
			w.saw(cur)
			if cur != nil {
				if v, mine := w.own(*cur); mine {
					if v.done {
						return v.res, v.err
					}
					wake, w.added = time.Now(), false // freed (or the store failed): read again
					continue
				}
				if cur.Released && cur.Result == Success {
					// Refused over a success: when it is one the wait may
					// take, the refusal is the answer, as a read would be.
					if v := w.decide(*cur, true); v.done {
						return v.res, v.err
					}
				}
			}
			w.observe(cur) // another waiter won the race, or a failure holds us back
			next, res, err, done := w.afterRefusal(cur)
			if done {
				return res, err
			}
			wake = next
		}
	}
}

// verdict is what a waiter makes of one read of the item.
type verdict struct {
	done     bool // the wait ends with res, err
	res      WaitResult
	err      error
	take     bool                  // race one conditional write for the lock
	observed *storeapi.Observation // with take: the clock-free observation it rests on
	wake     time.Time             // when not zero: read again then, not sooner
}

// judge decides what to do about it (found: it exists).
func (w *waiter) judge(it storeapi.Item, found bool) verdict {
	v := w.decide(it, found)
	if found {
		w.saw(&it)
	} else {
		w.seen = true
	}
	return v
}

// saw notes that the wait had the item it back from the store (nil: none).
func (w *waiter) saw(it *storeapi.Item) {
	if it == nil {
		return
	}
	w.seen, w.seenFence = true, max(w.seenFence, it.Fence)
	if !w.nobodys(it.Revision) {
		w.holderFence = max(w.holderFence, it.Fence)
	}
}

// nobodys reports whether revision is a write the wait knows was held by
// nobody: one of its own attempts that did not acquire, or an acquire its
// environment gave up on (see ownattempt.go, lostattempt.go).
func (w *waiter) nobodys(revision string) bool {
	if _, mine := w.tried.find(revision); mine {
		return true
	}
	return w.l.hot.gaveUp(w.l.key, revision)
}

// ours reports whether a success at fence, released at releasedAtMs (the
// releasing host's wall clock), was published during this wait, so that
// the wait may return it: its fence is at least that of a holder the wait
// saw holding the lock, or above every fence the wait saw on the item; or
// it is fresh (see [WithFreshSuccess]); or, for a wait that saw no holder,
// it was released no more than the clock allowance before the wait began:
// the burst the wait belongs to. A success older than that and no longer
// fresh is old news: the lock is free. A wait whose first write was
// throttled, or whose first read found such a success and whose write was
// then throttled, must not take it for the answer it waits for.
func (w *waiter) ours(fence, releasedAtMs int64) bool {
	switch {
	case w.minFence > 0:
		return fence >= w.minFence
	case w.seen && fence > w.seenFence:
		return true
	case w.l.freshSuccess(storeapi.Item{ReleasedAtMs: releasedAtMs}):
		return true
	}
	return releasedAtMs >= w.startMs-w.l.o.clockAllowance.Milliseconds()
}

// newsSinceMs is the earliest release time of a success that the wait
// takes for its answer by its time alone (see ours): its attempts' guard
// (B) keeps them off such a success (see attempt).
func (w *waiter) newsSinceMs() int64 {
	return max(w.startMs-w.l.o.clockAllowance.Milliseconds(), 1)
}

// decide is judge's verdict on one read, before the wait notes what it saw.
func (w *waiter) decide(it storeapi.Item, found bool) verdict {
	l := w.l
	switch {
	case !found:
		return verdict{take: true}
	case it.Released && it.Result == Success && !w.ours(it.ResultFence, it.ReleasedAtMs):
		return verdict{take: true} // old news: the lock is free
	case it.Released && it.Result == Success:
		l.count(metricLockNotReleased, 0)
		w.relay(it)
		return verdict{done: true, res: releasedResult(it)}
	case it.Released:
		if until, err, held := w.heldBack(it); held {
			if err != nil {
				return verdict{done: true, res: WaitResult{Outcome: Failed}, err: err}
			}
			return verdict{wake: until}
		}
		return verdict{take: true}
	}
	if v, mine := w.own(it); mine {
		return v // a late copy of our own attempt
	}
	switch {
	case w.obs == nil || it.Revision != w.obs.Revision || it.Beat != w.obs.Beat:
		w.observe(&it)
	case time.Since(w.obsAt) >= w.staleAfter():
		return verdict{take: true, observed: w.obs} // clock-free: unchanged for a whole lease
	case l.o.useWallClock && w.lapsedByWallClock(it):
		return verdict{take: true}
	}
	return verdict{}
}

// afterRefusal returns when to read next after a conditional write was
// refused over cur: at the failure's not-before time when a recent failure
// holds us back, else after a poll interval; or it ends the wait when the
// failure is final for us.
func (w *waiter) afterRefusal(cur *storeapi.Item) (wake time.Time, res WaitResult, err error, done bool) {
	wake = w.next(time.Now())
	if cur == nil || !cur.Released || cur.Result != Failure {
		return wake, res, nil, false
	}
	until, ferr, held := w.heldBack(*cur)
	switch {
	case !held:
		return wake, res, nil, false
	case ferr != nil:
		return wake, WaitResult{Outcome: Failed}, ferr, true
	default:
		w.added = false
		return until, res, nil, false
	}
}

// heldBack judges a released Failure it. held is false when it does not
// hold us back (old news, or its not-before has passed): the lock may be
// taken over. Otherwise err is a *HolderFailedError naming the not-before
// when it is past our deadline, and until is when to look again (the
// not-before, plus up to a fifth of a poll interval of jitter, so the
// waiters do not all write at once). The not-before is the one time the
// failing holder wrote for the next attempt, the upstream's pacing or an
// exhausted episode's hold-back (see [FailureEpisode]).
func (w *waiter) heldBack(it storeapi.Item) (until time.Time, err error, held bool) {
	l := w.l
	nowMs := l.nowMs()
	if it.FailRecentUntilMs <= nowMs || it.NotBeforeMs <= nowMs {
		return time.Time{}, nil, false
	}
	jitter := time.Duration(rand.Float64() * 0.2 * float64(l.o.pollInterval))
	until = time.Now().Add(time.Duration(it.NotBeforeMs-nowMs)*time.Millisecond + jitter)
	if until.Before(w.deadline) {
		return until, nil, true
	}
	hf := &HolderFailedError{Reason: it.FailReason, Attempts: int(it.Failures), NotBefore: time.UnixMilli(it.NotBeforeMs)}
	l.logAt(slog.LevelInfo, "lock holders of this burst failed; not retrying before the not-before",
		slog.String("reason", hf.Reason), slog.Int("attempts", hf.Attempts), slog.Int64("notBeforeMs", it.NotBeforeMs))
	return time.Time{}, hf, true
}

// timedOut ends a wait that reached its deadline at now.
func (w *waiter) timedOut(now time.Time) (WaitResult, error) {
	w.l.logAt(slog.LevelWarn, "lock wait timed out", slog.Int("polls", w.polls), slog.Duration("waited", now.Sub(w.start)),
		slog.Int("throttled", w.throttles), slog.Int("timedOut", w.timeouts))
	return WaitResult{Outcome: Failed}, w.timeoutError()
}

// observe starts watching item (nil: absent) if its revision or beat
// differs from what we watch.
func (w *waiter) observe(it *storeapi.Item) {
	if it == nil || it.Released {
		w.obs = nil
		w.predRev = ""
		return
	}
	if it.Revision != w.predRev {
		w.predRev = ""
		if p, ok := predict(*it, time.Now(), w.l.nowMs(), w.l.o.pollInterval); ok {
			w.pred, w.predRev, w.dense = p, it.Revision, 0
		}
	}
	w.minFence = max(w.minFence, it.Fence)
	if w.obs != nil && w.obs.Revision == it.Revision && w.obs.Beat == it.Beat {
		return
	}
	w.obs = &storeapi.Observation{Revision: it.Revision, Beat: it.Beat}
	w.obsAt = time.Now()
	w.obsLease = it.Lease
}

// staleAfter is how long an unchanged (revision, beat) proves the holder
// stopped: the item's lease stretched by the drift bound, plus a poll.
func (w *waiter) staleAfter() time.Duration {
	lease := w.obsLease
	if lease <= 0 {
		lease = w.l.o.lease
	}
	return time.Duration(float64(lease)*(1+w.l.o.drift)) + w.l.o.pollInterval
}

func (w *waiter) lapsedByWallClock(it storeapi.Item) bool { return w.l.lapsed(it) }

// next returns when to read next, after a read at now: at the ordinary
// pace, or sooner on the schedule predicted for the holder (see
// predict.go) while it lasts and the store is not throttling us. The pace
// goes on from its own reads: a read the schedule added does not push the
// pace's next read back (it would, for an end after the added reads, make
// the waiter learn of it later than at the fixed pace).
func (w *waiter) next(now time.Time) time.Time {
	w.added = false
	if w.crowded() {
		// Most polls read the announcement shard: its own pace rules.
		return now.Add(w.intervalAt(w.annPace))
	}
	if !w.reading || !now.Before(w.floorAt) {
		w.floorAt = now.Add(w.interval()) // the read at now was the pace's
	}
	if w.predRev == "" || w.pace > 0 || !w.pred.wake.Before(w.deadline.Add(-w.l.o.pollInterval)) {
		// A guessed end at or near the deadline adds no reads: the
		// wait's last reads are the pace's, not ones the deadline cuts.
		return w.floorAt
	}
	at := w.predicted(now, w.floorAt)
	w.added = at.Before(w.floorAt)
	return at
}

// interval is the next sleep: the poll interval, doubled for each
// throttled poll in a row (up to 2^maxPaceShift times), with ±20% jitter.
func (w *waiter) interval() time.Duration { return w.intervalAt(w.pace) }

// intervalAt is interval at a given pace.
func (w *waiter) intervalAt(pace int) time.Duration {
	d := w.l.o.pollInterval << min(pace, maxPaceShift)
	return time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
}

// releasedResult is the result of a wait that saw it released with Success. The
// answer counts only when the release that published this success wrote it.
func releasedResult(it storeapi.Item) WaitResult {
	res := WaitResult{Outcome: Released, Fence: it.ResultFence, ResultRef: it.ResultRef, ReleasedAt: msTime(it.ReleasedAtMs)}
	if it.ResultFence == it.Fence && len(it.Answer) > 0 {
		res.Answer = it.Answer
	}
	return res
}

// poll reads the item once, within one call timeout (see calltimeout.go),
// and keeps the pace: a throttled read stretches the next interval, a
// served one resets it. A throttled read that the prediction added (see
// next) ends the added reads for this holder instead: the herd has no room
// for them, and the pace's own reads go on, on the lock item, as at the
// fixed pace.
func (w *waiter) poll() (storeapi.Item, bool, error) {
	added := w.added
	w.reading = added
	var it storeapi.Item
	var found bool
	err := w.l.timedCall(w.callCtx, time.Time{}, func(ctx context.Context) (err error) {
		it, found, err = w.l.store.Get(ctx, w.l.key)
		return err
	})
	w.polls++
	switch {
	case err == nil:
		w.pace = 0
	case isThrottled(err):
		w.throttles++
		if added {
			w.dense = denseReads + 1
			w.addedThrottles++
		} else {
			w.pace++
		}
		w.l.count(metricLockThrottled, 1)
	}
	if err != nil {
		w.note(err)
	}
	return it, found, err
}

// note keeps err as the wait's last error, unless it is only the wait's own
// timeout (a call cut short by the deadline or by the attempt timeout while
// the caller's context is alive): that says nothing about the store, and
// must not hide the throttle or the failure before it.
func (w *waiter) note(err error) {
	if w.ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
		w.timeouts++
		return
	}
	w.lastErr = err
}

// timeoutError is the error of a wait that reached its deadline: it names
// the key and, when the store throttled the wait, matches [ErrThrottled]
// too. It matches the context's deadline error only when that error was
// the caller's own.
func (w *waiter) timeoutError() error {
	k := w.l.key
	where := fmt.Sprintf("lock %s/%s", k.Group, k.ID)
	if w.timeouts > 0 {
		where += fmt.Sprintf(" (%d store calls timed out)", w.timeouts)
	}
	if !w.seen {
		// Nothing read: nobody may hold the lock (see waitoutcome).
		return waitoutcome.Unread(w.timeoutErrorAt(where))
	}
	return w.timeoutErrorAt(where)
}

// timeoutErrorAt is timeoutError's error with where naming the key.
func (w *waiter) timeoutErrorAt(where string) error {
	switch {
	case w.throttles > 0 && w.lastErr != nil:
		return fmt.Errorf("%w: %s: %w: the store throttled %d of this wait's calls (a hot key): last error: %w",
			ErrWaitTimeout, where, ErrThrottled, w.throttles, w.lastErr)
	case w.throttles > 0:
		return fmt.Errorf("%w: %s: %w: the store throttled %d of this wait's calls (a hot key)",
			ErrWaitTimeout, where, ErrThrottled, w.throttles)
	case w.lastErr != nil:
		return fmt.Errorf("%w: %s: last error: %w", ErrWaitTimeout, where, w.lastErr)
	}
	return fmt.Errorf("%w: %s", ErrWaitTimeout, where)
}

// msTime is the time of ms milliseconds since the epoch, the zero time
// for 0 or less (not recorded).
func msTime(ms int64) time.Time {
	if ms <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}

func boolMetric(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// minTime returns the earlier of a and b, where a zero time means none.
func minTime(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}
