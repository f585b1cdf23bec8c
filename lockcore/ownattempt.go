package lockcore

import (
	"log/slog"
	"time"

	"github.com/herdlock/herdlock/lockcore/storeapi"
)

// A wait's own earlier attempts.
//
// An acquire that did not acquire (refused, throttled, or settled as not
// applied) may still land: the SDK retries a request whose answer was
// lost, and the answer the call returned can be a later copy's, while an
// earlier copy is still on its way. When that copy lands after the lock
// became free (its holder released a failure that does not hold back, or
// an operator released it), it takes the key for a caller that no longer
// thinks it is acquiring. A wait that then reads the item sees a holder
// that never renews: without this file it would watch it for a whole lease
// and take it over, and the key would be held by nobody meanwhile.
//
// So a wait notes each attempt of its own that did not acquire, and when a
// read shows the item held by one of them, the wait holds it: at once when
// the attempt's validity (a lease from when it was sent, less the margin)
// has time left and the wait has not ended, and otherwise it frees the item
// with a release conditioned on that revision and races for the lock again.
// Nobody else can have held the key in between: taking it from that
// revision would have changed the item's revision.
//
// A copy that lands after its wait returned is not caught here: no caller
// is left to hold it. The wait leaves its attempts to its execution
// environment, whose next wait frees such a copy (see lostattempt.go);
// elsewhere it is taken over after a lease.
//
// A wait that acquires over a copy it freed itself is told the kind of
// acquisition the copy's was (see kind): no take-over over a copy that
// replaced a release, a take-over when the copy took over a crashed
// holder's lease.

// maxTries bounds the attempts a wait remembers: a wait makes one attempt
// per read that showed the lock acquirable, and a late copy lands within
// the SDK's retries of its attempt, so the last few are the ones that can.
const maxTries = 8

// try is one attempt of a wait that did not acquire.
type try struct {
	revision string
	sent     time.Time // monotonic: when the attempt was sent
	maxHold  time.Duration
	takeover bool
}

// tries are a wait's attempts that did not acquire, the latest last, and
// the last write the wait freed as held by nobody (a late copy, or its own
// write settled too late to hold): an acquisition over it is of the kind
// that write's was (see kind).
type tries struct {
	list  []try
	freed *storeapi.Item // as the store had it before the release; nil: none
}

// free notes it, a write the wait freed as held by nobody (t nil: nothing
// is noted).
func (t *tries) free(it *storeapi.Item) {
	if t != nil {
		t.freed = it
	}
}

// freedItem returns the last write the wait freed, nil when none (or t
// is nil).
func (t *tries) freedItem() *storeapi.Item {
	if t == nil {
		return nil
	}
	return t.freed
}

// note adds an attempt (t nil: nothing is noted).
func (t *tries) note(revision string, sent time.Time, maxHold time.Duration, takeover bool) {
	if t == nil {
		return
	}
	if len(t.list) == maxTries {
		t.list = append(t.list[:0], t.list[1:]...)
	}
	t.list = append(t.list, try{revision: revision, sent: sent, maxHold: maxHold, takeover: takeover})
}

// find returns the attempt that wrote revision, if the wait made it.
func (t *tries) find(revision string) (try, bool) {
	for _, a := range t.list {
		if a.revision == revision {
			return a, true
		}
	}
	return try{}, false
}

// own judges a held item that one of the wait's own attempts wrote, or an
// attempt that a call in this environment gave up on (see lostattempt.go)
// (ok false: neither): the wait holds it, or frees it and races again.
func (w *waiter) own(it storeapi.Item) (v verdict, ok bool) {
	if it.Released {
		return verdict{}, false
	}
	l := w.l
	a, mine := w.tried.find(it.Revision)
	lost := !mine && l.hot.gaveUp(l.key, it.Revision)
	switch {
	case !mine && !lost:
		return verdict{}, false
	case mine && !l.late(w.ctx, w.deadline) && time.Now().Before(a.sent.Add(l.o.lease-l.validityMargin())):
		l.logAt(slog.LevelInfo, "a late copy of this wait's own acquire holds the lock", slog.Int64("fence", it.Fence))
		l.count(metricLateCopy, 1)
		h := l.startHold(w.ctx, it, a.sent, a.maxHold, a.takeover, w.tried.freed, a.sent) // it may replace a copy the wait freed (see kind)
		return verdict{done: true, res: WaitResult{Outcome: Acquired, Fence: it.Fence, TookOver: h.tookOver, AfterFailure: h.afterFailure}}, true
	}
	// Too late to hold it, or nobody's: free it, keeping its episode as
	// the late copy wrote it (see settle), and race for the lock. The
	// release ends with the wait (callCtx): a copy it could not free is
	// left to the environment's next call (see lostattempt.go). A release
	// the store refused (see isRefusal) ends the wait, as a refused
	// acquire does: the next one would be refused too.
	free := storeapi.ReleaseRequest{Key: l.key, Revision: it.Revision, NowMs: l.nowMs(), Result: Failure, KeepEpisode: true, Unheld: true}
	if err := l.free(w.callCtx, free); isRefusal(err) {
		return verdict{done: true, res: WaitResult{Outcome: Failed}, err: &AcquireError{Reason: ReasonStore, Revision: it.Revision, Cause: err}}, true
	} else if err != nil {
		return verdict{}, true // the store failed: the next read tries again
	}
	w.tried.free(&it)
	l.count(metricLateCopy, 1)
	if lost {
		l.logAt(slog.LevelInfo, "freed a late copy of an acquire a call gave up on", slog.Int64("fence", it.Fence))
		return verdict{take: true}, true
	}
	l.logAt(slog.LevelInfo, "freed a late copy of this wait's own acquire", slog.Int64("fence", it.Fence))
	return verdict{take: true}, true
}
