package chaos

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/herdlock/herdlock/internal/seedlock"
)

// Check names one of the seven checks.
type Check string

const (
	CheckFences    Check = "1 fences"
	CheckMutex     Check = "2 mutual exclusion"
	CheckLiveness  Check = "3 liveness"
	CheckHerd      Check = "4 herd"
	CheckLinear    Check = "5 linearizability"
	CheckEpisode   Check = "6 upstream calls per failure"
	CheckOperator  Check = "7 operator release kept"
	CheckPublished Check = "8 released results published"
)

// Checks lists the checks in order: the safety checks, then the contract
// checks (ContractChecks, check_contract.go), then the idempotency check
// (check_idem.go).
var Checks = append(append([]Check{CheckFences, CheckMutex, CheckLiveness, CheckHerd, CheckLinear, CheckEpisode, CheckOperator, CheckPublished},
	ContractChecks...), CheckIdempotency)

// grant is one applied acquisition at the store.
type grant struct {
	key        string
	rev        string
	fence      int64
	worker     int
	call, ret  int64
	phase      int
	opID       int64
	acquiredBy bool // a worker reported ACQUIRED with this revision
}

// analysis holds the indexes the checks share.
type analysis struct {
	cfg    *Config
	rec    *recorder
	grants map[string][]*grant // per key, in apply order
	renews map[string][]int64  // revision -> Return of applied renewals
	rels   map[string][]int64  // revision -> Call of applied releases, the operator's too
	forced map[string]StoreOp  // revision -> the first applied operator force-release
	bound  int64
	// wallBase is the host's wall clock less Mono, in nanoseconds: it maps
	// the wall-clock milliseconds in items to true time.
	wallBase int64
	rep      *Report
	maxShow  int
}

func (a *analysis) violate(c Check, format string, args ...any) {
	a.rep.Violations[c]++
	if len(a.rep.Details[c]) < a.maxShow {
		a.rep.Details[c] = append(a.rep.Details[c], fmt.Sprintf(format, args...))
	}
}

func (a *analysis) phaseKind(t int64) PhaseKind {
	return a.cfg.Phases[phaseIndex(a.cfg.Phases, t)].Kind
}

// check runs checks 1 to 15 on a run's records; wallBase is the host's wall
// clock less Mono.
func check(cfg *Config, rec *recorder, killedHerd map[string]bool, wallBase int64) *Report {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	rep := newReport(cfg)
	rep.CapacityThrottled = throttledOps(rec.ops)
	a := &analysis{cfg: cfg, rec: rec, grants: map[string][]*grant{}, renews: map[string][]int64{}, rels: map[string][]int64{},
		forced: map[string]StoreOp{}, bound: int64(cfg.LivenessBound()), wallBase: wallBase, rep: rep, maxShow: 5}
	a.index()
	a.tally()
	a.checkFences()
	a.checkMutex()
	a.checkLiveness()
	a.checkHerd(killedHerd)
	a.checkEpisodes()
	a.checkOperator()
	if cfg.Variant != VariantSeed {
		a.checkPublished()
		a.checkContract() // lockcore's contract; the seed's protocol has another
		a.checkIdempotency()
	}
	a.tallyStorm()
	if cfg.Variant != VariantSeed {
		lr := checkLinearizable(rec.ops, cfg.LinTimeout)
		rep.Lin = lr
		for _, k := range lr.Illegal {
			a.violate(CheckLinear, "key %s: store history not linearizable", k)
		}
		if lr.FirstBad != "" {
			rep.Details[CheckLinear] = append(rep.Details[CheckLinear], lr.FirstBad)
		}
	}
	return rep
}

// index builds the grants, renewals and releases from the store history.
func (a *analysis) index() {
	acquired := map[string]bool{}
	for _, e := range a.rec.events {
		if e.Kind == EvWait && e.Outcome == "ACQUIRED" {
			acquired[e.Rev] = true
		}
	}
	for i := range a.rec.ops {
		op := &a.rec.ops[i]
		if op.Status != 200 || isIdemKey(op.Key) {
			continue // the idempotency records are check 15's, and check 5's
		}
		var g *grant
		switch {
		case op.Intent != nil:
			in := op.Intent
			switch {
			case in.Op == "acquire" && op.Item != nil && op.Item.Rev == in.Rev:
				g = &grant{key: in.Key, rev: in.Rev, fence: op.Item.Fence}
			case in.Op == "renew":
				a.renews[in.Rev] = append(a.renews[in.Rev], op.Return)
			case in.Op == "release", in.Op == "release-unguarded":
				a.rels[in.Rev] = append(a.rels[in.Rev], op.Call)
			case in.Op == "op-release":
				a.rels[in.Rev] = append(a.rels[in.Rev], op.Call)
				if f, ok := a.forced[in.Rev]; !ok || op.Call < f.Call {
					a.forced[in.Rev] = *op
				}
			}
		case op.Target == "PutItem" && op.PutRev != "":
			g = &grant{key: op.Key, rev: op.PutRev, fence: seedlock.RevisionTime(op.PutRev)}
		case op.Target == "UpdateItem" && strings.Contains(op.Expr, "isReleased"):
			a.rels[op.CondRev] = append(a.rels[op.CondRev], op.Call)
		case op.Target == "UpdateItem" && strings.Contains(op.Expr, "createdAt"):
			a.renews[op.CondRev] = append(a.renews[op.CondRev], op.Return)
		}
		if g != nil {
			g.worker, g.call, g.ret, g.opID = op.Worker, op.Call, op.Return, op.ID
			g.phase = phaseIndex(a.cfg.Phases, op.Call)
			g.acquiredBy = acquired[g.rev]
			a.grants[g.key] = append(a.grants[g.key], g)
		}
	}
	for _, gs := range a.grants {
		if a.cfg.Variant == VariantSeed {
			// No fence orders the seed's grants: use the true time.
			sort.SliceStable(gs, func(i, j int) bool { return gs[i].call < gs[j].call })
		} else {
			sort.SliceStable(gs, func(i, j int) bool { return gs[i].fence < gs[j].fence })
		}
	}
}

// tally fills the counts of the report.
func (a *analysis) tally() {
	r := a.rep
	for _, e := range a.rec.events {
		for k, v := range e.Metrics {
			r.LockMetrics[k] += v
		}
		switch e.Kind {
		case EvWait:
			r.Outcomes[e.Outcome]++
			if e.TookOver {
				r.TookOver++
			}
			if e.Announced {
				r.Announced++
			}
		case EvRelease:
			r.Cycles++
			if e.Err != "" {
				r.ReleaseErrors++
			}
		case EvOperator:
			r.Operator[e.Outcome]++
		}
	}
	for _, f := range a.rec.faults {
		r.Faults[f.Kind]++
	}
	r.StoreOps = len(a.rec.ops)
	for _, gs := range a.grants {
		r.Grants += len(gs)
		for _, g := range gs {
			if !g.acquiredBy {
				r.Orphans++
			}
		}
	}
	for _, w := range a.rec.writes {
		if !w.Accepted {
			r.Rejected++
		}
		if w.Shadow {
			r.ShadowStale++
		}
	}
}

// checkFences is check 1: fences unique and increasing per key in real-time
// order at the store, and accepted writes never going backwards.
func (a *analysis) checkFences() {
	for key, gs := range a.grants {
		seen := map[int64]*grant{}
		for _, g := range gs {
			if o, dup := seen[g.fence]; dup && o.rev != g.rev {
				a.violate(CheckFences, "key %s: fence %d granted twice (w%d and w%d)", key, g.fence, o.worker, g.worker)
			}
			seen[g.fence] = g
		}
		byCall := append([]*grant(nil), gs...)
		sort.Slice(byCall, func(i, j int) bool { return byCall[i].call < byCall[j].call })
		byRet := append([]*grant(nil), gs...)
		sort.Slice(byRet, func(i, j int) bool { return byRet[i].ret < byRet[j].ret })
		var maxDone *grant
		j := 0
		for _, g := range byCall {
			for j < len(byRet) && byRet[j].ret < g.call {
				if maxDone == nil || byRet[j].fence > maxDone.fence {
					maxDone = byRet[j]
				}
				j++
			}
			if maxDone != nil && maxDone.fence >= g.fence {
				a.violate(CheckFences, "key %s: grant to w%d (fence %d) applied after grant to w%d with fence %d",
					key, g.worker, g.fence, maxDone.worker, maxDone.fence)
			}
		}
	}
	maxAcc := map[string]int64{}
	for _, w := range a.rec.writes {
		if !w.Accepted {
			continue
		}
		if m, ok := maxAcc[w.Key]; ok && w.Fence < m {
			a.violate(CheckFences, "resource key %s: accepted fence %d after %d", w.Key, w.Fence, m)
		}
		maxAcc[w.Key] = max(maxAcc[w.Key], w.Fence)
	}
}

// checkMutex is check 2: no holder acts, at a true time, after the next
// holder's grant was applied.
func (a *analysis) checkMutex() {
	r := a.rep
	for _, w := range a.rec.writes {
		gs := a.grants[w.Key]
		i := -1
		for k, g := range gs {
			if g.rev == w.Rev && (a.cfg.Variant == VariantSeed || g.fence == w.Fence) {
				i = k
				break
			}
		}
		if i < 0 {
			// A holder acted on a grant the store never applied.
			r.Unmatched++
			a.violate(CheckMutex, "key %s: w%d wrote with fence %d, revision %s, which the store never granted", w.Key, w.Worker, w.Fence, short(w.Rev))
			continue
		}
		next := nextGrant(gs[i+1:], w.Rev)
		if next == nil {
			continue
		}
		if w.T > next.ret {
			r.LateArrivals++
		}
		if f, ok := a.forced[w.Rev]; ok && f.Call < w.TCheck && w.TCheck > next.call &&
			w.TCheck <= f.Return+int64(float64(a.cfg.Lease)*(1+a.cfg.Drift)) {
			// An operator force-released this holder's lock: it may act
			// until it learns so, at most for the rest of its lease; the
			// fence refuses its late writes (check 1).
			r.ForcedActs++
			continue
		}
		asserted := a.phaseKind(w.TCheck).assertsMutex() && a.phaseKind(gs[i].call).assertsMutex() && a.phaseKind(next.call).assertsMutex()
		switch {
		case w.TCheck > next.ret:
			if asserted {
				a.violate(CheckMutex, "key %s: w%d acted with fence %d %v after w%d's grant (fence %d) was applied",
					w.Key, w.Worker, w.Fence, time.Duration(w.TCheck-next.ret), next.worker, next.fence)
			} else {
				r.MutexCounted++
			}
		case w.TCheck > next.call:
			r.MutexAmbiguous++
		}
	}
}

// interval is a stretch of true time during which a worker was faulted.
type interval struct{ from, to int64 }

// checkLiveness is check 3: after a holder is killed or frozen, or a grant
// is orphaned, an unfaulted waiter holds the lock within the bound.
func (a *analysis) checkLiveness() {
	r := a.rep
	// Freezes, kills and partitions take a worker out: it is no eligible
	// waiter while they last. A request fault costs the waiter time, which
	// extends its deadline: a hung request its attempt timeout, a delay its
	// length; the others are retried at once.
	faulted := map[int][]interval{}
	var brown []interval // brownouts, of every worker
	type cost struct {
		t int64
		d int64
	}
	costs := map[int][]cost{}
	type stop struct {
		t      int64
		worker int
		kind   string
	}
	var stops []stop
	for _, f := range a.rec.faults {
		switch f.Kind {
		case FaultKill:
			stops = append(stops, stop{f.T, f.Worker, f.Kind})
			faulted[f.Worker] = append(faulted[f.Worker], interval{f.T, f.T})
		case FaultFreeze, FaultFreezeReturned:
			stops = append(stops, stop{f.T, f.Worker, f.Kind})
			faulted[f.Worker] = append(faulted[f.Worker], interval{f.T, f.Until})
		case FaultPartition:
			faulted[f.Worker] = append(faulted[f.Worker], interval{f.T, f.Until})
		case FaultBrownout, FaultBrownoutStretch, FaultMisconfig:
			// Every request of the stretch is late (or, misconfigured, no
			// write applies): the stretch, and its longest delay, extend
			// the deadline of a wait it overlaps.
			brown = append(brown, interval{f.T, f.Until})
		case FaultBrownoutDelay, FaultOperator, FaultUpstream, FaultAccessDenied:
			// Covered by the brownout's stretch; not a fault of a waiter.
		default:
			mode, _, _ := strings.Cut(f.Detail, " ")
			var d int64
			if dd, err := time.ParseDuration(mode); err == nil {
				d = int64(dd)
			} else if mode == "hang" || mode == "stall" {
				d = int64(a.cfg.hangFor())
			}
			if d > 0 {
				costs[f.Worker] = append(costs[f.Worker], cost{f.T, d})
			}
		}
	}
	for _, gs := range a.grants {
		for _, g := range gs {
			if !g.acquiredBy {
				stops = append(stops, stop{g.ret, g.worker, "orphan"})
			}
		}
	}
	clean := func(w int, from, to int64) bool {
		for _, iv := range faulted[w] {
			if iv.from <= to && iv.to >= from {
				return false
			}
		}
		return true
	}
	// delayed extends a deadline by the cost of w's request faults since
	// from (faults that extend it may add more).
	delayed := func(w int, from, to int64) int64 {
		for _, c := range costs[w] {
			if c.t >= from && c.t <= to {
				to += c.d
			}
		}
		for _, b := range brown {
			if b.from <= to && b.to >= from {
				to += b.to - b.from
			}
		}
		return to
	}
	waits := map[string][]Event{}
	for _, e := range a.rec.events {
		if e.Kind == EvWait {
			waits[e.Key] = append(waits[e.Key], e)
		}
	}
	runEnd := a.cfg.Phases[len(a.cfg.Phases)-1].End
	for _, s := range stops {
		for key, gs := range a.grants {
			// The grant current at s.t, if it is s.worker's.
			cur := -1
			for i, g := range gs {
				if g.call < s.t {
					cur = i
				}
			}
			if cur < 0 || gs[cur].worker != s.worker {
				continue
			}
			g := gs[cur]
			if s.kind == "orphan" && g.ret != s.t {
				continue
			}
			next := nextGrant(gs[cur+1:], g.rev)
			if next != nil && next.call < s.t {
				continue
			}
			last := g.ret
			for _, t := range a.renews[g.rev] {
				if next == nil || t < next.ret {
					last = max(last, t)
				}
			}
			released := false
			for _, t := range a.rels[g.rev] {
				if t <= last+a.bound {
					released = true
				}
			}
			if released {
				continue
			}
			// The earliest deadline any eligible waiter sets.
			deadline := int64(-1)
			for _, e := range waits[key] {
				if e.Worker == s.worker || e.T > max(last, s.t) || e.T2 <= s.t {
					continue
				}
				d := delayed(e.Worker, e.T, max(last, e.T)+a.bound)
				if e.T2 < d && e.Outcome == "FAILED" {
					continue // gave up (maximum wait) before it was owed the lock
				}
				if !clean(e.Worker, e.T, d) {
					continue
				}
				if deadline < 0 || d < deadline {
					deadline = d
				}
			}
			if deadline < 0 || deadline > runEnd-int64(time.Second) {
				continue
			}
			r.LivenessChecked++
			if next == nil || next.call > deadline {
				took := "never"
				if next != nil {
					took = time.Duration(next.call - last).String()
				}
				a.violate(CheckLiveness, "key %s: %s of w%d (last renewal at +%v): next grant after %s, bound %v",
					key, s.kind, s.worker, time.Duration(last-a.cfg.Phases[0].Start), took, a.cfg.LivenessBound())
				if next != nil {
					r.Liveness = append(r.Liveness, time.Duration(next.call-last))
				}
				continue
			}
			r.Liveness = append(r.Liveness, time.Duration(max(0, next.call-last)))
		}
	}
}

// checkHerd is check 4: per herd round, one fetch and data for all when the
// holder succeeds; at most two fetches and no RELEASED without data when
// it is killed; in a round whose upstream refuses with a Retry-After, at
// most one fetch per Retry-After (the failure policy) and one served
// fetch. Everywhere: no RELEASED without data.
func (a *analysis) checkHerd(killed map[string]bool) {
	r := a.rep
	fetches := map[string]int{}
	byKey := map[string][]Fetch{}
	for _, f := range a.rec.fetches {
		if isHerdKey(f.Key) {
			fetches[f.Key]++
			byKey[f.Key] = append(byKey[f.Key], f)
			r.HerdFetches++
		}
	}
	present := map[string]map[int]bool{}
	for _, e := range a.rec.events {
		if e.Kind != EvRead {
			continue
		}
		if !e.Present {
			a.violate(CheckHerd, "w%d: RELEASED on %s without data", e.Worker, e.Key)
		}
		if present[e.Key] == nil {
			present[e.Key] = map[int]bool{}
		}
		present[e.Key][e.Worker] = e.Present
	}
	rounds := map[string]*HerdRound{}
	var order []string
	for _, e := range a.rec.events {
		if !strings.HasPrefix(e.Key, lockGroup+"/herd.") {
			continue
		}
		hr := rounds[e.Key]
		if hr == nil {
			hr = &HerdRound{Key: e.Key, Killed: killed[e.Key], Fetches: fetches[e.Key], Refused: refusedFetches(byKey[e.Key])}
			rounds[e.Key] = hr
			order = append(order, e.Key)
		}
		switch e.Kind {
		case EvWait:
			hr.Workers++
			switch {
			case e.Outcome == "ACQUIRED":
				hr.Acquired++
			case e.Outcome == "RELEASED" && present[e.Key][e.Worker]:
				hr.WithData++
			case e.Outcome == "RELEASED":
				hr.Empty++
			default:
				hr.Failed++
			}
		case EvRelease:
			if e.Outcome == "success" && e.Err == "" {
				hr.HolderOK = true
			}
		}
	}
	sort.Strings(order)
	for _, k := range order {
		hr := rounds[k]
		switch {
		case hr.Killed:
			hr.Verdict = "killed"
			if hr.Fetches > 2 {
				a.violate(CheckHerd, "%s: holder killed, %d upstream fetches (want at most 2)", k, hr.Fetches)
			}
		case hr.Refused > 0:
			hr.Verdict = "upstream refused with Retry-After"
			a.checkPaced(k, byKey[k])
			if served := hr.Fetches - hr.Refused; hr.HolderOK && served != 1 {
				a.violate(CheckHerd, "%s: holder succeeded after %d refused fetches, %d served fetches (want 1)", k, hr.Refused, served)
			}
			if got := hr.Acquired + hr.WithData; hr.HolderOK && got != hr.Workers {
				a.violate(CheckHerd, "%s: holder succeeded, %d of %d workers got the data", k, got, hr.Workers)
			}
		case hr.HolderOK:
			hr.Verdict = "holder succeeded"
			if hr.Fetches != 1 {
				a.violate(CheckHerd, "%s: holder succeeded, %d upstream fetches (want 1)", k, hr.Fetches)
			}
			if got := hr.Acquired + hr.WithData; got != hr.Workers {
				a.violate(CheckHerd, "%s: holder succeeded, %d of %d workers got the data", k, got, hr.Workers)
			}
		default:
			hr.Verdict = "inconclusive (holder neither killed nor successful)"
		}
		r.Herd = append(r.Herd, *hr)
	}
}

// checkPaced checks the failure policy on the fetches of key, in time
// order: after a fetch the upstream refused with a Retry-After, the herd
// makes its next fetch no sooner than that, less what the clocks of the
// herd phase may differ by.
func (a *analysis) checkPaced(key string, fs []Fetch) {
	slack := 2*time.Duration(a.cfg.SkewA.OffsetMs)*time.Millisecond + 50*time.Millisecond
	sort.Slice(fs, func(i, j int) bool { return fs[i].T < fs[j].T })
	for i := 1; i < len(fs); i++ {
		prev := fs[i-1]
		if gap := time.Duration(fs[i].T - prev.T); prev.RetryAfter > 0 && gap < prev.RetryAfter-slack {
			a.violate(CheckHerd, "%s: fetch %d came %v after a refusal asking for %v (want one fetch per Retry-After)",
				key, i+1, gap, prev.RetryAfter)
		}
	}
}

// refusedFetches counts the fetches of fs the upstream refused.
func refusedFetches(fs []Fetch) int {
	n := 0
	for _, f := range fs {
		if f.RetryAfter > 0 {
			n++
		}
	}
	return n
}

// nextGrant returns the first grant in gs with a revision other than rev
// (a retried write of the same acquisition is not a new holder), or nil.
func nextGrant(gs []*grant, rev string) *grant {
	for _, g := range gs {
		if g.rev != rev {
			return g
		}
	}
	return nil
}
