package chaos

import (
	"fmt"
	"time"
)

// stormDue is when each storm fault is next due (Mono).
type stormDue struct{ brownout, operator, upstream int64 }

// endStorm ends the brownouts and the failing upstream (faults of a phase
// end with it) and draws the next storm faults from now.
func (p *parent) endStorm(now int64) stormDue {
	for _, px := range p.allProxies() {
		px.brownOut(brownout{})
	}
	p.res.failUpstream(0, 0)
	s := p.cfg.Storm
	return stormDue{brownout: now + p.expGap(s.BrownoutEvery), operator: now + p.expGap(s.OperatorEvery),
		upstream: now + p.expGap(s.UpstreamFailEvery)}
}

// allProxies returns the workers' proxies and the operator's.
func (p *parent) allProxies() []*proxy { return append(append([]*proxy(nil), p.prox...), p.opProxy) }

// stormLocked starts the storm faults that are due at now. p.mu is held.
func (p *parent) stormLocked(now int64, due *stormDue) {
	s := p.cfg.Storm
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
		due.upstream = now + int64(d) + p.expGap(s.UpstreamFailEvery)
		var ra time.Duration
		if p.rng.Float64() < s.RetryAfterP {
			ra = p.uniform(s.RetryAfterMin, s.RetryAfterMax).Truncate(time.Second)
		}
		p.res.failUpstream(now+int64(d), ra)
		p.rec.fault(Fault{T: now, Worker: -1, Kind: FaultUpstream, Until: now + int64(d), Detail: fmt.Sprintf("for %v, Retry-After %v", d, ra)})
	}
	if s.OperatorEvery > 0 && now >= due.operator {
		due.operator = now + p.expGap(s.OperatorEvery)
		if slot, key, ok := p.pickAnyHolderLocked(); ok {
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
// its key.
func (p *parent) pickAnyHolderLocked() (int, string, bool) {
	var slots []int
	for slot := range p.cfg.Workers {
		if _, ok := p.holding[slot]; ok && p.procs[slot] != nil && !p.procs[slot].killed {
			slots = append(slots, slot)
		}
	}
	if len(slots) == 0 {
		return 0, "", false
	}
	slot := slots[p.rng.IntN(len(slots))]
	return slot, p.holding[slot], true
}
