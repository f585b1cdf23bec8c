package chaos

import (
	"fmt"
	"time"
)

// stormDue is when each storm fault is next due (Mono), and how many
// failing stretches of the upstream the phase has had.
type stormDue struct {
	brownout, operator, upstream int64
	stretches                    int
	phase                        int
	// The phase's brownout and misconfiguration stretches (Config.
	// stretches), and whether each has begun and ended.
	brown, misconfig         interval
	brownOn, misOn, misEnded bool
}

// endStorm ends the brownouts and the failing upstream (faults of a phase
// end with it) and draws the next storm faults from now, the first of each
// within the first quarter of phase idx when it is a storm.
func (p *parent) endStorm(now int64, idx int) stormDue {
	for _, px := range p.allProxies() {
		px.brownOut(brownout{})
		px.denyWritesFor(false)
	}
	p.res.failUpstream(0, 0)
	s := p.cfg.Storm
	due := stormDue{brownout: now + p.firstGap(s.BrownoutEvery, idx), operator: now + p.firstGap(s.OperatorEvery, idx),
		upstream: now + p.firstGap(s.UpstreamFailEvery, idx), phase: idx}
	if idx >= 0 && p.cfg.Phases[idx].Kind == Storm {
		due.brown, due.misconfig = p.cfg.stretches(p.cfg.Phases[idx])
	}
	return due
}

// stretchesLocked starts and ends the phase's brownout and
// misconfiguration stretches. p.mu is held.
func (p *parent) stretchesLocked(now int64, due *stormDue) {
	at := p.cfg.AttemptTimeout
	if b := due.brown; b.to > 0 && !due.brownOn && now >= b.from {
		due.brownOn = true
		for _, px := range p.allProxies() {
			px.brownOut(brownout{until: b.to, lo: at, hi: 3 * at})
		}
		p.rec.fault(Fault{T: now, Worker: -1, Kind: FaultBrownoutStretch, Until: b.to + int64(3*at),
			Detail: fmt.Sprintf("%v, every answer in [%v, %v]", time.Duration(b.to-now), at, 3*at)})
	}
	if m := due.misconfig; m.to > 0 && !due.misOn && now >= m.from {
		due.misOn = true
		for _, px := range p.prox {
			px.denyWritesFor(true)
		}
		p.rec.fault(Fault{T: now, Worker: -1, Kind: FaultMisconfig, Until: m.to, Detail: time.Duration(m.to - now).String()})
	}
	if m := due.misconfig; due.misOn && !due.misEnded && now >= m.to {
		due.misEnded = true
		for _, px := range p.prox {
			px.denyWritesFor(false)
		}
	}
}

// allProxies returns the workers' proxies and the operator's.
func (p *parent) allProxies() []*proxy { return append(append([]*proxy(nil), p.prox...), p.opProxy) }

// stormLocked starts the storm faults that are due at now. p.mu is held.
func (p *parent) stormLocked(now int64, due *stormDue) {
	s := p.cfg.Storm
	p.stretchesLocked(now, due)
	if b := due.brown; b.to > 0 && now >= due.brownout && now < b.to && now >= b.from-int64(s.BrownoutMax+s.BrownoutDelayMax) {
		// The stretch is the brownout: none of its own starts in it, nor
		// one that would run into it.
		due.brownout = b.to + p.expGap(s.BrownoutEvery)
	}
	if s.BrownoutEvery > 0 && now >= due.brownout {
		d := p.uniform(s.BrownoutMin, s.BrownoutMax)
		due.brownout = now + int64(d) + p.expGap(s.BrownoutEvery)
		b := brownout{until: now + int64(d), lo: s.BrownoutDelayMin, hi: s.BrownoutDelayMax}
		for _, px := range p.allProxies() {
			px.brownOut(b)
		}
		// Every worker's requests are late; one that came in before the
		// end is answered up to the longest delay later.
		p.rec.fault(Fault{T: now, Worker: -1, Kind: FaultBrownout, Until: b.until + int64(s.BrownoutDelayMax), Detail: d.String()})
	}
	if s.UpstreamFailEvery > 0 && now >= due.upstream {
		d := p.uniform(s.UpstreamFailMin, s.UpstreamFailMax)
		// A phase's first stretch answers 429 with Retry-After and its
		// second 503 without (as far as RetryAfterP allows either), both
		// soon and as long as any; then each is drawn.
		gap, withRA := p.expGap(s.UpstreamFailEvery), p.rng.Float64() < s.RetryAfterP
		long := false
		switch due.stretches {
		case 0:
			d, gap, withRA = s.UpstreamFailMax, p.firstGap(s.UpstreamFailEvery, due.phase), s.RetryAfterP > 0
			long = withRA && s.LongRetryAfter > 0
		case 1:
			d, withRA = s.UpstreamFailMax, s.RetryAfterP >= 1
		}
		due.stretches++
		due.upstream = now + int64(d) + gap
		var ra time.Duration
		if withRA {
			ra = p.uniform(s.RetryAfterMin, s.RetryAfterMax).Truncate(time.Second)
		}
		if long {
			ra = s.LongRetryAfter.Truncate(time.Second)
		}
		p.res.failUpstream(now+int64(d), ra)
		p.rec.fault(Fault{T: now, Worker: -1, Kind: FaultUpstream, Until: now + int64(d), Detail: fmt.Sprintf("for %v, Retry-After %v", d, ra)})
	}
	if s.OperatorEvery > 0 && now >= due.operator {
		// A force-release that is due waits for a holder.
		if slot, key, ok := p.pickAnyHolderLocked(); ok {
			due.operator = now + p.expGap(s.OperatorEvery)
			p.rec.fault(Fault{T: now, Worker: slot, Kind: FaultOperator, Detail: "key " + key})
			p.ops.Add(1)
			go func() {
				defer p.ops.Done()
				p.op.forceRelease(slot, key)
			}()
		}
	}
}

// uniform draws a duration in [lo, hi].
func (p *parent) uniform(lo, hi time.Duration) time.Duration {
	return lo + time.Duration(p.rng.Int64N(int64(hi-lo)+1))
}

// pickAnyHolderLocked picks a worker that holds a lock, frozen or not, and
// its key: one in the last lease before its hard maximum when there is
// one (where a holder that stopped renewing would not see the release).
func (p *parent) pickAnyHolderLocked() (int, string, bool) {
	var slots, late []int
	now := Mono()
	for slot := range p.cfg.Workers {
		if _, ok := p.holding[slot]; ok && p.procs[slot] != nil && !p.procs[slot].killed {
			slots = append(slots, slot)
			if age := time.Duration(now - p.heldAt[slot]); age >= p.cfg.MaxHold-p.cfg.Lease && age < p.cfg.MaxHold {
				late = append(late, slot)
			}
		}
	}
	if len(late) > 0 {
		slots = late
	}
	if len(slots) == 0 {
		return 0, "", false
	}
	slot := slots[p.rng.IntN(len(slots))]
	return slot, p.holding[slot], true
}
