package chaos

import (
	"net/http"
	"sort"
	"strings"
	"time"
)

// The contract checks judge what each caller was told, and when, against
// the history: the outcome and error of every wait, the not-before a
// refusal named, every hold's Valid() interval and its context's cause
// (the workers' EvWait and EvValid events), beside the store requests the
// proxies saw and answered. The safety checks (1 to 8) judge the store's
// history; these judge the callers' view of it.
const (
	// CheckReleasedFresh (9): a wait returns RELEASED only with a success
	// it may take: published while it waited, or within the fresh-success
	// window (storm cycles, StormFaults.FreshSuccess) or the clock
	// allowance (lockcore's burst window for a wait that saw no holder)
	// before it came, and never one older than a holder it had seen.
	CheckReleasedFresh Check = "9 RELEASED with a success it may take"
	// CheckToldTime (10): a refusal that names a time is honest: the
	// invocation that comes back at that time is admitted, not refused
	// again by the failure it was told about.
	CheckToldTime Check = "10 a time told is honest"
	// CheckTwoValid (11): two holders of a key are both Valid() only after
	// an operator's force-release of the older one, and then only until
	// its next renewal is answered, which it sends within a renewal
	// interval of the force-release; and a force-released holder learns it
	// there (its context does not end later with ErrMaxHoldReached).
	CheckTwoValid Check = "11 two Valid() holders only after a force-release"
	// CheckServedWait (12): while the store answers a waiter within 4× the
	// attempt timeout, the waiter does not end FAILED with a wait timeout
	// when a success it may take was published, and stayed on the item,
	// before its deadline less the margin.
	CheckServedWait Check = "12 no wait timeout over a published success"
	// CheckEarlyEnd (13): a waiter learns of a holder's end (a success, a
	// failure, a force-release, a crash) no later than the fixed pace of
	// reads would have told it, whatever schedule it predicted.
	CheckEarlyEnd Check = "13 an early end learned at the fixed pace"
	// CheckNotApplied (14): a store error that says the write was not
	// applied (AccessDeniedException, ResourceNotFoundException,
	// ValidationException) ends the wait or release that got it within a
	// second.
	CheckNotApplied Check = "14 a not-applied error ends its call within 1 s"
)

// ContractChecks lists the contract checks.
var ContractChecks = []Check{CheckReleasedFresh, CheckToldTime, CheckTwoValid, CheckServedWait, CheckEarlyEnd, CheckNotApplied}

// notAppliedErrors are the DynamoDB errors that say a request was not
// applied and will not be by retrying it.
var notAppliedErrors = map[string]bool{
	"AccessDeniedException": true, "ResourceNotFoundException": true, "ValidationException": true,
	"UnrecognizedClientException": true, "MissingAuthenticationTokenException": true,
}

const (
	// contractSlack absorbs the scheduling of a loaded machine and the
	// sampling of Valid() in the timing checks 11, 12 and 13.
	contractSlack = 200 * time.Millisecond
	// notAppliedBound is how soon a call must end after a not-applied
	// error (check 14).
	notAppliedBound = time.Second
	// paceShift mirrors lockcore's cap on the throttled pace: a waiter's
	// interval doubles per throttled poll up to 2^paceShift times.
	paceShift = 2
)

// contract holds the indexes the contract checks share.
type contract struct {
	a       *analysis
	ops     map[int][]*StoreOp  // per worker slot, by arrival at the proxy
	faults  map[int][]Fault     // per worker slot, by T
	valid   map[string]Event    // revision -> the hold's EvValid event
	waits   map[string][]Event  // key -> EvWait events, by T
	success map[string]*StoreOp // revision -> its first applied Success release
	relOf   map[string]*StoreOp // revision -> its first applied release (a holder's or the operator's)
	grantOf map[string]*grant   // revision -> its first grant
}

// sent is when the worker sent op (Intent.Sent), or its arrival when
// the request carried no send time (an announcement's, or a history
// built without).
func sent(op *StoreOp) int64 {
	if in := op.Intent; in != nil && in.Sent > 0 {
		return min(in.Sent, arrival(op))
	}
	return arrival(op)
}

// arrival is when op reached the proxy (its forwarding, in histories
// built without arrival times).
func arrival(op *StoreOp) int64 {
	if op.Arrive > 0 {
		return op.Arrive
	}
	return op.Call
}

// checkContract runs checks 9 to 14.
func (a *analysis) checkContract() {
	c := newContract(a)
	c.releasedFresh()
	c.toldTime()
	c.twoValid()
	c.servedWait()
	c.earlyEnd()
	c.notApplied()
}

// newContract builds the contract checks' indexes over a's records.
func newContract(a *analysis) *contract {
	c := &contract{a: a, ops: map[int][]*StoreOp{}, faults: map[int][]Fault{}, valid: map[string]Event{},
		waits: map[string][]Event{}, success: map[string]*StoreOp{}, relOf: map[string]*StoreOp{}, grantOf: map[string]*grant{}}
	for i := range a.rec.ops {
		op := &a.rec.ops[i]
		c.ops[op.Worker] = append(c.ops[op.Worker], op)
		in := op.Intent
		if in == nil || op.Status != http.StatusOK || (in.Op != "release" && in.Op != "op-release") {
			continue
		}
		if r, ok := c.relOf[in.Rev]; !ok || op.Call < r.Call {
			c.relOf[in.Rev] = op
		}
		if in.Op == "release" && in.Result == "success" {
			if r, ok := c.success[in.Rev]; !ok || op.Call < r.Call {
				c.success[in.Rev] = op
			}
		}
	}
	for _, ops := range c.ops {
		sort.SliceStable(ops, func(i, j int) bool { return arrival(ops[i]) < arrival(ops[j]) })
	}
	for _, f := range a.rec.faults {
		c.faults[f.Worker] = append(c.faults[f.Worker], f)
	}
	for _, e := range a.rec.events {
		switch e.Kind {
		case EvValid:
			c.valid[e.Rev] = e
		case EvWait:
			c.waits[e.Key] = append(c.waits[e.Key], e)
		case EvStall:
			a.rep.Stalls++
			c.faults[e.Worker] = append(c.faults[e.Worker], Fault{T: e.T, Until: e.T2, Worker: e.Worker, Kind: EvStall})
		}
	}
	for _, ws := range c.waits {
		sort.SliceStable(ws, func(i, j int) bool { return ws[i].T < ws[j].T })
	}
	for _, fs := range c.faults {
		sort.SliceStable(fs, func(i, j int) bool { return fs[i].T < fs[j].T })
	}
	for _, gs := range a.grants {
		for _, g := range gs {
			if _, ok := c.grantOf[g.rev]; !ok {
				c.grantOf[g.rev] = g
			}
		}
	}
	return c
}

// opsIn returns worker w's requests that reached the proxy in [from, to].
func (c *contract) opsIn(w int, from, to int64) []*StoreOp {
	ops := c.ops[w]
	i := sort.Search(len(ops), func(i int) bool { return arrival(ops[i]) >= from })
	j := sort.Search(len(ops), func(i int) bool { return arrival(ops[i]) > to })
	return ops[i:j]
}

// servedWell reports whether op is an answer the contract counts as the
// store answering: the worker got a served answer (200, or a refused
// condition) within 4× the attempt timeout.
func (c *contract) servedWell(op *StoreOp) bool {
	if op.Answer == 0 || op.Answer-arrival(op) > int64(c.a.cfg.clientTimeout()) {
		return false
	}
	return op.Status == http.StatusOK || (op.Status == http.StatusBadRequest && op.ErrType == ccf)
}

// disturbed says why worker w was not served as the timing checks assume
// in [from, to] (a process fault, a request fault, an answer that was
// lost, late, throttled or a 5xx; with gone, also an answer the worker
// had given up on), or "" when it was.
func (c *contract) disturbed(w int, from, to int64, gone bool) string {
	fs := c.faults[w]
	i := sort.Search(len(fs), func(i int) bool { return fs[i].T >= from-int64(10*time.Second) })
	for _, f := range fs[i:] {
		if f.T > to {
			break
		}
		end := max(f.T, f.Until)
		if end < from {
			continue
		}
		switch f.Kind {
		case FaultKill, FaultFreeze, FaultFreezeReturned, FaultPartition, FaultPartitionDrop, FaultPartitionResp,
			FaultDropBefore, FaultDropAfter, FaultThrottleCRC, FaultThrottleNoCRC, FaultAccessDenied, EvStall:
			return f.Kind
		}
	}
	for _, op := range c.opsIn(w, from, to) {
		if !op.Dup && !c.servedWell(op) {
			return "answer " + op.Target + " " + answerDesc(op)
		}
		if !op.Dup && gone && op.Gone {
			return "answer " + op.Target + " given up"
		}
	}
	return ""
}

func answerDesc(op *StoreOp) string {
	switch {
	case op.Answer == 0:
		return "lost"
	case op.Status != http.StatusOK && op.ErrType != "":
		return op.ErrType
	case op.Status != http.StatusOK:
		return http.StatusText(op.Status)
	}
	return "after " + time.Duration(op.Answer-arrival(op)).Round(time.Millisecond).String()
}

// gap is the longest a waiter at the fixed pace goes between two reads of
// the lock item: a jittered poll interval, twice over when it reads
// announcements too (the read after an announcement with nothing new is
// of the lock item).
func (c *contract) gap(crowded bool) int64 {
	g := int64(c.a.cfg.Poll) * 12 / 10
	if crowded {
		g *= 2
	}
	return g
}

// crowded reports whether worker w read announcements in [from, to].
func (c *contract) crowded(w int, key string, from, to int64) bool {
	for _, op := range c.opsIn(w, from, to) {
		if strings.HasPrefix(op.Key, key+"#") {
			return true
		}
	}
	return false
}

// releasedFresh is check 9.
func (c *contract) releasedFresh() {
	a := c.a
	for _, ws := range c.waits {
		for _, e := range ws {
			if e.Outcome != "RELEASED" {
				continue
			}
			gs := a.grants[e.Key]
			var g *grant
			for _, x := range gs {
				if x.fence == e.Fence {
					g = x
					break
				}
			}
			if g == nil {
				continue // check 8: never published
			}
			// A newer holder seen, holding the lock or released (with its
			// own success, or a failure), makes the older success stale;
			// the wait's own acquire writes (a late copy it frees) do
			// not.
			ops := c.opsIn(e.Worker, e.T, e.T2)
			own := map[string]bool{}
			for _, op := range ops {
				if in := op.Intent; in != nil && in.Op == "acquire" && in.Key == e.Key {
					own[in.Rev] = true
				}
			}
			for _, op := range ops {
				if it := op.Item; op.Key == e.Key && it != nil && !own[it.Rev] && it.Fence > e.Fence && op.Answer > 0 && !op.Gone && op.Answer <= e.T2 {
					state := "holding the lock"
					if it.Rel {
						state = "released with " + it.Result
					}
					a.violate(CheckReleasedFresh, "w%d: RELEASED on %s (+%v) with the success of fence %d after it had seen fence %d %s (+%v)",
						e.Worker, e.Key, a.since(e.T), e.Fence, it.Fence, state, a.since(op.Answer))
					break
				}
			}
			rel := c.success[g.rev]
			if rel == nil {
				continue
			}
			window := int64(a.freshWindow(e.T)) + a.pairSkew(rel.Call, e.T)
			if rel.Return < e.T-window {
				a.violate(CheckReleasedFresh, "w%d: RELEASED on %s (+%v) with a success published %v before the wait began (window %v)",
					e.Worker, e.Key, a.since(e.T), time.Duration(e.T-rel.Return).Round(time.Millisecond), time.Duration(window).Round(time.Millisecond))
			}
		}
	}
}

// toldTime is check 10: the invocation that came back at the not-before it
// was told must not be refused by the failure it was told about: not told
// the same not-before again, and no answer to it showing that failure
// (its revision) with a later not-before than it was told.
func (c *contract) toldTime() {
	a := c.a
	for key, ws := range c.waits {
		for i, e := range ws {
			if e.BackMs == 0 {
				continue
			}
			a.rep.Comebacks++
			var told *Event
			for j := i - 1; j >= 0; j-- {
				if p := ws[j]; p.Worker == e.Worker && p.Inc == e.Inc && p.NotBeforeMs == e.BackMs {
					told = &ws[j]
					break
				}
			}
			if told == nil {
				continue
			}
			if e.Outcome == "FAILED" && e.Cause == causeHolderFailed && e.NotBeforeMs <= e.BackMs {
				a.violate(CheckToldTime, "w%d on %s: told at +%v to come back at not-before %d, came back (+%v) and was refused again with not-before %d",
					e.Worker, key, a.since(told.T2), e.BackMs, a.since(e.T), e.NotBeforeMs)
				continue
			}
			rev := c.toldRevision(*told)
			if rev == "" {
				continue
			}
			for _, op := range c.opsIn(e.Worker, e.T, e.T2) {
				if it := op.Item; op.Key == key && it != nil && it.Rev == rev && it.Rel && it.Result == "failure" && it.NotBefore > e.BackMs {
					a.violate(CheckToldTime, "w%d on %s: told not-before %d for revision %s, which showed not-before %d when it came back (+%v)",
						e.Worker, key, e.BackMs, short(rev), it.NotBefore, a.since(e.T))
					break
				}
			}
		}
	}
}

// toldRevision returns the revision of the failure that refused wait e:
// the last item its worker read on its key before it returned, released
// with failure at the not-before it was told.
func (c *contract) toldRevision(e Event) string {
	ops := c.opsIn(e.Worker, e.T, e.T2)
	for i := len(ops) - 1; i >= 0; i-- {
		if it := ops[i].Item; ops[i].Key == e.Key && it != nil && it.Rel && it.Result == "failure" && it.NotBefore == e.NotBeforeMs {
			return it.Rev
		}
	}
	return ""
}

// twoValid is check 11. For every two holds of a key whose sampled
// Valid() intervals overlap (the older one's last true sample after the
// newer one's first), the older must have been force-released before the
// overlap; and then it must send a renewal within a renewal interval of
// the force-release, and stop being Valid() when the first refused one is
// answered. A holder whose renewals got no answer could not learn, and is
// not judged.
func (c *contract) twoValid() {
	a := c.a
	interval := max(500*time.Millisecond, a.cfg.Lease/3) // lockcore's renewal interval (the workers keep the default floor, 500ms)
	for key, gs := range a.grants {
		for i, old := range gs {
			ov, ok := c.valid[old.rev]
			if !ok || ov.T == 0 {
				continue
			}
			for _, nw := range gs[i+1:] {
				nv, ok := c.valid[nw.rev]
				if !ok || nv.T == 0 || nw.rev == old.rev || ov.T2 <= nv.T || nv.T2 <= ov.T {
					continue // the sampled intervals do not meet
				}
				c.judgeOverlap(key, old, ov, nw, nv, interval)
				break // the first newer holder decides; later ones add nothing
			}
		}
	}
	c.forcedCause(interval)
}

// forcedCause is the part of check 11 that reads the holder's context: a
// holder force-released while Valid() learns it at its next renewal, so
// its context ends with ErrLeaseLost; one whose context ended with
// ErrMaxHoldReached more than a renewal interval (and the slack) after the
// force-release never learned (it had stopped renewing before its hard
// maximum).
func (c *contract) forcedCause(interval time.Duration) {
	a := c.a
	for rev, f := range a.forced {
		v, ok := c.valid[rev]
		if !ok || v.Cause != "max_hold" || v.T == 0 || f.Return > v.T2 {
			continue
		}
		if learn := max(f.Return, v.T) + int64(interval) + int64(contractSlack); v.Until > learn {
			a.violate(CheckTwoValid, "key %s: w%d (fence %d) force-released at +%v, Valid() until +%v, its context ended with ErrMaxHoldReached: it never learned of the release",
				f.Intent.Key, v.Worker, v.Fence, a.since(f.Return), a.since(v.T2))
		}
	}
}

func (c *contract) judgeOverlap(key string, old *grant, ov Event, nw *grant, nv Event, interval time.Duration) {
	a := c.a
	overlap := time.Duration(min(ov.T2, nv.T2) - max(ov.T, nv.T)).Round(time.Millisecond)
	f, forced := a.forced[old.rev]
	// The force-release must come before the two were both Valid(): one
	// that came during the overlap does not excuse its start.
	if !forced || f.Call > max(ov.T, nv.T) {
		if a.phaseKind(nv.T).assertsMutex() && a.phaseKind(ov.T2).assertsMutex() && a.phaseKind(old.call).assertsMutex() {
			a.violate(CheckTwoValid, "key %s: w%d (fence %d) and w%d (fence %d) both Valid() for %v (+%v) without a force-release",
				key, ov.Worker, old.fence, nv.Worker, nw.fence, overlap, a.since(nv.T))
		}
		return
	}
	// The holder renews a renewal interval after it learned it holds the
	// lock (its acquire's answer may come after the force-release), or
	// after the renewal in flight when the force-release came.
	start := max(f.Return, ov.T)
	for _, op := range c.opsIn(ov.Worker, f.Call-int64(c.a.cfg.clientTimeout()), f.Return) {
		if in := op.Intent; in != nil && strings.HasPrefix(in.Op, "renew") && in.Rev == old.rev && op.Answer > start {
			start = op.Answer
		}
	}
	due := start + int64(interval) + int64(contractSlack)
	if ov.T2 <= due {
		return
	}
	var sent bool
	for _, op := range c.opsIn(ov.Worker, f.Call, ov.T2) {
		in := op.Intent
		if in == nil || !strings.HasPrefix(in.Op, "renew") || in.Rev != old.rev || op.Dup {
			continue
		}
		if arrival(op) <= due {
			sent = true
		}
		if op.Answer == 0 || op.Gone || op.Status != http.StatusBadRequest || op.ErrType != ccf {
			continue // no answer that tells it
		}
		// A process that was not scheduled after the answer came could
		// not act on it until it was again (and its sampler may run
		// first then).
		if ov.T2 > max(op.Answer, c.stallEnd(ov.Worker, op.Answer, ov.T2))+int64(contractSlack) {
			a.violate(CheckTwoValid, "key %s: w%d (fence %d) force-released at +%v, its renewal refused at +%v, still Valid() at +%v beside w%d (fence %d); cause %q",
				key, ov.Worker, old.fence, a.since(f.Return), a.since(op.Answer), a.since(ov.T2), nv.Worker, nw.fence, ov.Cause)
		}
		return
	}
	if !sent && c.disturbed(ov.Worker, f.Call, due, false) == "" {
		a.violate(CheckTwoValid, "key %s: w%d (fence %d) force-released at +%v sent no renewal within %v, Valid() until +%v beside w%d (fence %d) for %v; cause %q",
			key, ov.Worker, old.fence, a.since(f.Return), interval, a.since(ov.T2), nv.Worker, nw.fence, overlap, ov.Cause)
	}
}

// servedWait is check 12.
func (c *contract) servedWait() {
	a := c.a
	for key, ws := range c.waits {
		for _, e := range ws {
			if e.Outcome != "FAILED" || e.Cause != causeWaitTimeout {
				continue
			}
			deadline := e.T + int64(a.cfg.MaxWait)
			s, by := c.takeable(key, e, deadline)
			if s == nil {
				continue
			}
			if c.disturbed(e.Worker, s.Return-c.gap(false)<<paceShift, deadline, false) != "" {
				a.rep.ContractExcused++
				continue
			}
			a.violate(CheckServedWait, "w%d on %s: FAILED with a wait timeout at +%v, though the store answered it within %v and fence %d's success was published at +%v, to be read by +%v (deadline +%v)",
				e.Worker, key, a.since(e.T2), a.cfg.clientTimeout(), c.grantOf[s.Intent.Rev].fence, a.since(s.Return), a.since(by), a.since(deadline))
		}
	}
}

// freshWindow is how long before a wait that began at t a success it may
// take can have been published: the storm cycles' fresh-success window,
// or the clock allowance.
func (a *analysis) freshWindow(t int64) time.Duration {
	if a.phaseKind(t) == Storm {
		return max(a.cfg.ClockAllowance, a.cfg.Storm.FreshSuccess)
	}
	return a.cfg.ClockAllowance
}

// takeable returns a success on key that wait e may take, and by when a
// waiter at the fixed pace whose timeouts follow the store's latency
// would have read it, when that is before the wait's deadline and the
// success stayed on the item until then (no newer grant before): it was
// published from the clock allowance before the wait began. The reader
// reads a poll interval (jittered) after the publication and has the
// answer within the attempt timeout when the store answered the wait's
// requests within it, else within 4× it; and once the wait's first
// answer slower than the attempt timeout came, its timeouts may need to
// double twice (the attempt timeout, then 2×, each followed by a poll
// interval) before they allow 4×, as a lock that had not yet measured
// the store's latency would. Check 12 judges only waits that were not
// throttled, so the pace is never slowed.
func (c *contract) takeable(key string, e Event, deadline int64) (*StoreOp, int64) {
	a := c.a
	at := int64(a.cfg.AttemptTimeout)
	var slowAt int64 // the first answer of the wait slower than the attempt timeout
	for _, op := range c.opsIn(e.Worker, e.T, deadline) {
		if op.Answer > 0 && op.Answer-arrival(op) > at {
			slowAt = arrival(op)
			break
		}
	}
	gs := a.grants[key]
	for _, g := range gs {
		s := c.success[g.rev]
		if s == nil || s.Return < e.T-int64(a.freshWindow(e.T)) {
			continue
		}
		by := s.Return + c.gap(false) + at + int64(contractSlack)
		if slowAt > 0 {
			by = max(s.Return, slowAt+3*at+2*c.gap(false)) + c.gap(false) + int64(a.cfg.clientTimeout()) + int64(contractSlack)
		}
		if by > deadline {
			continue
		}
		if next := nextGrant(gsAfter(gs, g), g.rev); next != nil && next.ret <= by {
			continue // another holder took the lock before a reader was owed the success
		}
		return s, by
	}
	return nil, 0
}

// gsAfter returns the grants of gs after g.
func gsAfter(gs []*grant, g *grant) []*grant {
	for i, x := range gs {
		if x == g {
			return gs[i+1:]
		}
	}
	return nil
}

// holdEnd is the end of a hold that waiters must learn of: learnAt is when
// a read at the fixed pace shows it (a release applied), or, after a
// crash, when the holder's last beat (its last applied renewal, one in
// flight at the kill and applied after it too) became stale for a waiter
// that saw it at once.
type holdEnd struct {
	key     string
	rev     string
	at      int64 // the release applied, or the kill
	learnAt int64
	what    string
	crash   bool
}

// earlyEnd is check 13.
func (c *contract) earlyEnd() {
	a := c.a
	var ends []holdEnd
	for rev, rel := range c.relOf {
		g := c.grantOf[rev]
		if g == nil {
			continue
		}
		what := "failure"
		switch {
		case rel.Intent.Op == "op-release":
			what = "force-release"
		case rel.Intent.Result == "success":
			what = "success"
		}
		ends = append(ends, holdEnd{key: g.key, rev: rev, at: rel.Return, learnAt: rel.Return, what: what})
	}
	stale := int64(float64(a.cfg.Lease)*(1+a.cfg.Drift)) + int64(a.cfg.Poll)
	for _, f := range a.rec.faults {
		if f.Kind != FaultKill {
			continue
		}
		for key, gs := range a.grants {
			var g *grant
			for _, x := range gs {
				if x.call < f.T {
					g = x
				}
			}
			if g == nil || g.worker != f.Worker || !g.acquiredBy {
				continue
			}
			if r, ok := c.relOf[g.rev]; ok && r.Call < f.T {
				continue
			}
			// Every applied renewal of the hold is a beat the waiters
			// see, one applied after the kill too: the holder sent it
			// before, and the proxy held it on its way (a renewal the
			// store applies renews the lease, whoever is alive to send
			// the next).
			beat := g.ret
			for _, t := range a.renews[g.rev] {
				beat = max(beat, t)
			}
			// A reader at the fixed pace sees the last beat within a gap,
			// and finds it stale a lease later.
			ends = append(ends, holdEnd{key: key, rev: g.rev, at: f.T, learnAt: beat + c.gap(false) + stale, what: "crash", crash: true})
		}
	}
	sort.Slice(ends, func(i, j int) bool { return ends[i].at < ends[j].at })
	for _, end := range ends {
		c.judgeEnd(end)
	}
}

// judgeEnd checks every waiter on end's key that was waiting when the hold
// ended: by a gap after the end was there to learn (after its own request
// in flight then was answered, and after a not-before it was sleeping
// to), it must have read the lock item (or, for a crash, tried to take
// it over), or ended its wait. Waiters that were not served as the
// contract assumes are not judged.
func (c *contract) judgeEnd(end holdEnd) {
	a := c.a
	gs := a.grants[end.key]
	var nextAt int64 // the next grant after the end, if any
	for _, g := range gs {
		if g.rev != end.rev && g.call > end.at-int64(time.Second) && g.ret >= end.at && (nextAt == 0 || g.ret < nextAt) {
			nextAt = g.ret
		}
	}
	for _, e := range c.waits[end.key] {
		if e.T >= end.at || e.T2 <= end.learnAt || e.Worker == c.grantOf[end.rev].worker {
			continue
		}
		learn := end.learnAt
		if end.crash {
			// It finds the last beat stale a lease after it first saw it.
			for _, op := range c.opsIn(e.Worker, e.T, e.T2) {
				if op.Key == end.key && op.Answer > 0 && !op.Dup {
					learn = max(learn, op.Answer+int64(float64(a.cfg.Lease)*(1+a.cfg.Drift))+int64(a.cfg.Poll))
					break
				}
			}
		}
		for _, op := range c.opsIn(e.Worker, e.T, learn) {
			if op.Answer > learn {
				learn = op.Answer // in flight: the next read comes after its answer
			}
			if it := op.Item; op.Key == end.key && it != nil && it.Rel && it.Result == "failure" && it.NotBefore > 0 {
				// Asleep until a not-before it read: it reads at it.
				nb := a.wallToMono(it.NotBefore) + a.pairSkew(op.Call, learn) + int64(a.cfg.Poll)/5
				learn = max(learn, nb)
			}
		}
		due := learn + c.gap(c.crowded(e.Worker, end.key, e.T, learn+2*c.gap(true))) + int64(contractSlack)
		// A crowded waiter reads an announcement between two reads of
		// the lock item, at the fixed pace too: the lock item's read
		// comes a pace after that one read's answer.
		for _, op := range c.opsIn(e.Worker, learn, due) {
			if strings.HasPrefix(op.Key, end.key+"#") && !op.Dup && op.Answer > 0 {
				due = max(due, op.Answer+c.gap(false)+int64(contractSlack))
				break
			}
		}
		if e.T2 <= due {
			continue // it ended in time
		}
		if end.crash && nextAt > 0 && nextAt <= due {
			continue // another waiter took over: this one learns of a new holder
		}
		learned := false
		// A read the lock sent by due counts, though the transport or
		// the proxy's scheduling made it arrive later.
		for _, op := range c.opsIn(e.Worker, learn-int64(c.a.cfg.clientTimeout()), due+int64(c.a.cfg.clientTimeout())) {
			// An announcement carries only a success: reading one
			// tells a waiter nothing of a failure, a force-release or
			// a crash.
			announced := strings.HasPrefix(op.Key, end.key+"#") && end.what == "success"
			if sent(op) > due || op.Dup || op.Gone || op.Answer == 0 || (op.Key != end.key && !announced) || op.Call < end.at {
				continue // not a read of the ended hold that the waiter had back
			}
			if !end.crash || (op.Intent != nil && op.Intent.Op == "acquire") {
				learned = true
				break
			}
		}
		if learned {
			continue
		}
		// Reads given up before their answer are check 12's (timeouts),
		// not the pace's.
		if c.disturbed(e.Worker, end.at-c.gap(true)<<paceShift, due, true) != "" {
			a.rep.ContractExcused++
			continue
		}
		sent, cut := 0, 0
		for _, op := range c.opsIn(e.Worker, end.at, due) {
			if op.Key == end.key && !op.Dup {
				sent++
				if op.Gone {
					cut++
				}
			}
		}
		a.violate(CheckEarlyEnd, "w%d on %s: the holder's %s at +%v (w%d, fence %d) was there to learn at +%v, the wait had no answer of the lock item by +%v (it ended at +%v, %s); it sent %d reads in that time, %d of them given up before their answer",
			e.Worker, end.key, end.what, a.since(end.at), c.grantOf[end.rev].worker, c.grantOf[end.rev].fence,
			a.since(end.learnAt), a.since(due), a.since(e.T2), e.Outcome, sent, cut)
	}
}

// notApplied is check 14: every wait and release that got a not-applied
// error (from the store, or a write denied in a misconfiguration
// stretch) ends within a second of the first such answer.
func (c *contract) notApplied() {
	a := c.a
	type answer struct {
		w    int
		t    int64
		what string
	}
	var answers []answer
	for _, op := range a.rec.ops {
		// An announcement is a relay a wait may do without; only the
		// lock item's answers count, and only those the worker still
		// waited for (one it had given up on told it nothing).
		if op.Status == http.StatusBadRequest && notAppliedErrors[op.ErrType] && op.Answer > 0 && !op.Gone && !strings.Contains(op.Key, "#") {
			answers = append(answers, answer{op.Worker, op.Answer, op.ErrType + " to " + op.Target})
		}
	}
	for _, f := range a.rec.faults {
		if key, target, _ := strings.Cut(f.Detail, " "); f.Kind == FaultAccessDenied && !strings.Contains(key, "#") {
			answers = append(answers, answer{f.Worker, f.T, "AccessDeniedException to " + target})
		}
	}
	sort.Slice(answers, func(i, j int) bool { return answers[i].t < answers[j].t })
	calls := map[int][]Event{} // per worker: its waits and releases
	for _, e := range a.rec.events {
		if e.Kind == EvWait || e.Kind == EvRelease {
			calls[e.Worker] = append(calls[e.Worker], e)
		}
	}
	judged := map[[2]int64]bool{} // (worker, call start) already judged
	for _, ans := range answers {
		for _, e := range calls[ans.w] {
			if e.T > ans.t || e.T2 < ans.t {
				continue
			}
			id := [2]int64{int64(e.Worker), e.T}
			if judged[id] {
				continue
			}
			judged[id] = true
			if c.stalled(e.Worker, ans.t, e.T2) || c.unknownWrite(e, ans.t) {
				a.rep.ContractExcused++
				continue
			}
			a.rep.NotAppliedChecked++
			if took := time.Duration(e.T2 - ans.t); took > notAppliedBound {
				a.violate(CheckNotApplied, "w%d: %s on %s got %s at +%v and ended %v later (%s%s)",
					e.Worker, e.Kind, e.Key, ans.what, a.since(ans.t), took.Round(time.Millisecond), e.Outcome, errSuffix(e.Err))
			}
		}
	}
}

// unknownWrite reports whether call e sent a write of its key before t
// whose answer it never had (lost, or given up on): that write may have
// been applied, so a not-applied answer to a later write does not end the
// call, which must settle the earlier one first (an acquire left applied
// would hold the key for nobody).
func (c *contract) unknownWrite(e Event, t int64) bool {
	for _, op := range c.opsIn(e.Worker, e.T, t) {
		if op.Key == e.Key && !op.Dup && op.Target != "GetItem" && (op.Answer == 0 || op.Gone) {
			return true
		}
	}
	// A write the proxy held or dropped before forwarding it is recorded
	// as its fault only (Detail: the mode and the operation); the worker
	// could not tell it from one applied with its answer lost.
	for _, f := range c.faults[e.Worker] {
		if f.T >= e.T && f.T < t && (f.Kind == FaultDropBefore || f.Kind == FaultPartitionDrop) && strings.HasSuffix(f.Detail, " UpdateItem") {
			return true
		}
	}
	return false
}

// stallEnd returns the latest end of a stretch in which worker w's
// process was not scheduled (EvStall) that meets [from, to], 0 when none.
func (c *contract) stallEnd(w int, from, to int64) int64 {
	var end int64
	for _, f := range c.faults[w] {
		if f.Kind == EvStall && f.T <= to && f.Until >= from {
			end = max(end, f.Until)
		}
	}
	return end
}

// stalled reports whether worker w's process was not scheduled for a
// while in [from, to] (EvStall).
func (c *contract) stalled(w int, from, to int64) bool {
	for _, f := range c.faults[w] {
		if f.Kind == EvStall && f.T <= to && f.Until >= from {
			return true
		}
	}
	return false
}

func errSuffix(err string) string {
	if err == "" {
		return ""
	}
	if len(err) > 120 {
		err = err[:120] + "…"
	}
	return ": " + err
}
