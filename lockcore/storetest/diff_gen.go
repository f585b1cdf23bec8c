package storetest

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/herdlock/herdlock/lockcore"
)

// generator draws the steps of one lane of a differential run. It knows
// what the reference store answered so far (the item of every key), so it
// can aim at the edges of each condition: the right and a wrong revision or
// beat, a clock reading one millisecond either side of a lease's end, a
// fresh-success bound equal to the release time, a renewal just below the
// stored lease. Every step it returns is concrete: replaying it needs no
// generator.
//
// A generator is not safe for concurrent use; each lane has its own.
type generator struct {
	rng   *rand.Rand
	lane  int
	clock int64      // the lane's wall clock, epoch ms; writers read it with a skew
	seq   int        // revisions drawn so far
	slots []int      // the keys in use: indexes into keys
	keys  []keyState // by key index; a retired key is never used again
}

// keyState is what the generator knows of one key.
type keyState struct {
	item *lockcore.Item // as the reference last reported it; nil: none yet
	revs []string       // every revision drawn for this key
}

// newGenerator returns the generator of one lane, working on slots keys
// at a time.
func newGenerator(seed uint64, lane, slots int) *generator {
	g := &generator{
		rng:   rand.New(rand.NewPCG(seed, uint64(lane))),
		lane:  lane,
		clock: baseMs,
		slots: make([]int, slots),
		keys:  make([]keyState, slots),
	}
	for i := range g.slots {
		g.slots[i] = i
	}
	return g
}

// observe records the reference's answer to o.
func (g *generator) observe(o op, ref outcome) {
	if ref.class != classError && ref.item != nil {
		it := *ref.item
		g.keys[o.key].item = &it
	}
}

// leases are the lease lengths holders choose.
var leases = []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 10 * time.Second}

// allowances are the clock allowances of wall-clock acquires.
var allowances = []time.Duration{0, time.Millisecond, 500 * time.Millisecond, time.Second}

// pick returns one of xs.
func pick[T any](g *generator, xs ...T) T { return xs[g.rng.IntN(len(xs))] }

// chance is true with probability p.
func (g *generator) chance(p float64) bool { return g.rng.Float64() < p }

// near returns v moved by -1, 0 or +1 ms, or by up to ±span.
func (g *generator) near(v, span int64) int64 {
	if g.chance(0.7) {
		return v + g.rng.Int64N(3) - 1
	}
	return v + g.rng.Int64N(2*span+1) - span
}

// next draws one step.
func (g *generator) next() op {
	g.tick()
	slot := g.rng.IntN(len(g.slots))
	if g.chance(0.005) {
		// Retire the slot's key, as a TTL deletion would, for a new one:
		// steps on an absent item, and FenceBase on a new item, recur
		// through the run.
		g.slots[slot] = len(g.keys)
		g.keys = append(g.keys, keyState{})
	}
	k := g.slots[slot]
	o := op{key: k}
	switch n := g.rng.IntN(100); {
	case n < 38:
		o.kind, o.acquire = opAcquire, g.acquire(k)
	case n < 60:
		o.kind, o.renew = opRenew, g.renew(k)
	case n < 90:
		o.kind, o.release = opRelease, g.release(k)
	default:
		o.kind = opGet
	}
	if g.chance(0.01) {
		g.invalidate(&o)
	}
	return o
}

// tick moves the lane's clock forward, mostly by little.
func (g *generator) tick() {
	switch n := g.rng.IntN(10); {
	case n < 3:
	case n < 6:
		g.clock += g.rng.Int64N(50)
	case n < 9:
		g.clock += g.rng.Int64N(2_000)
	default:
		g.clock += g.rng.Int64N(15_000)
	}
}

// now is one writer's wall-clock reading: the lane's clock, sometimes
// skewed by up to three seconds either way.
func (g *generator) now() int64 {
	if g.chance(0.8) {
		return g.clock
	}
	return g.clock + g.rng.Int64N(6_001) - 3_000
}

// newRev draws a revision no request has used.
func (g *generator) newRev(k int) string {
	g.seq++
	rev := fmt.Sprintf("L%dr%d", g.lane, g.seq)
	g.keys[k].revs = append(g.keys[k].revs, rev)
	return rev
}

// otherRev returns a revision that is not the item's: an earlier one of the
// key, or one never written.
func (g *generator) otherRev(k int) string {
	ks := &g.keys[k]
	if len(ks.revs) > 0 && g.chance(0.7) {
		rev := ks.revs[g.rng.IntN(len(ks.revs))]
		if ks.item == nil || rev != ks.item.Revision {
			return rev
		}
	}
	return fmt.Sprintf("L%dnever%d", g.lane, g.rng.IntN(1000))
}

// holderRev returns mostly the item's revision, else another.
func (g *generator) holderRev(k int) string {
	if it := g.keys[k].item; it != nil && g.chance(0.8) {
		return it.Revision
	}
	return g.otherRev(k)
}

func (g *generator) acquire(k int) lockcore.AcquireRequest {
	cur := g.keys[k].item
	var rev string
	switch n := g.rng.IntN(100); {
	case n < 4 && cur != nil:
		rev = cur.Revision // the SDK's retry of an applied acquire
	case n < 8:
		rev = g.otherRev(k)
	default:
		rev = g.newRev(k)
	}
	lease := pick(g, leases...)
	r := lockcore.AcquireRequest{
		Owner:         "owner-" + rev,
		Revision:      rev,
		Lease:         lease,
		RecordAccount: pick(g, account, "act:210987654321/app:9"),
	}
	if g.chance(0.5) {
		r.UseWallClock = true
		r.ClockAllowance = pick(g, allowances...)
	}
	r.NowMs = g.now()
	if cur != nil && r.UseWallClock && g.chance(0.6) {
		// The wall-clock branch admits when an end is below now - allowance:
		// aim at either end, one millisecond either side.
		end := cur.LeaseUntilMs
		if g.chance(0.3) {
			end = cur.ExpiresAtMs
		}
		r.NowMs = g.near(end+r.ClockAllowance.Milliseconds(), 2_000)
	}
	r.LeaseUntilMs = r.NowMs + lease.Milliseconds()
	r.ExpiresAtMs = r.NowMs + pick[int64](g, 1, 2, 6)*lease.Milliseconds()
	if g.chance(0.5) {
		r.TTL = r.NowMs/1000 + 86_400
	}
	if g.chance(0.2) {
		r.FenceBase = g.rng.Int64N(50)
	}
	if g.chance(0.5) {
		r.Observed = g.observation(k)
	}
	if g.chance(0.5) {
		r.FreshSuccessSinceMs = g.freshSince(k, r.NowMs)
	}
	return r
}

// observation returns the item's revision and beat, or one of them wrong.
func (g *generator) observation(k int) *lockcore.Observation {
	cur := g.keys[k].item
	if cur == nil {
		return &lockcore.Observation{Revision: g.otherRev(k), Beat: g.rng.Int64N(3)}
	}
	o := &lockcore.Observation{Revision: cur.Revision, Beat: cur.Beat}
	switch n := g.rng.IntN(10); {
	case n < 5:
	case n < 8:
		o.Beat += pick[int64](g, -1, 1)
	default:
		o.Revision = g.otherRev(k)
	}
	return o
}

// freshSince returns a fresh-success bound near the item's release time
// when it has one, else a few seconds before now.
func (g *generator) freshSince(k int, now int64) int64 {
	if cur := g.keys[k].item; cur != nil && cur.ReleasedAtMs != 0 && g.chance(0.8) {
		return g.near(cur.ReleasedAtMs, 5_000)
	}
	return now - g.rng.Int64N(10_000)
}

func (g *generator) renew(k int) lockcore.RenewRequest {
	r := lockcore.RenewRequest{Revision: g.holderRev(k), NowMs: g.now()}
	lease := pick(g, leases...).Milliseconds()
	cur := g.keys[k].item
	switch n := g.rng.IntN(10); {
	case cur == nil || n < 4:
		r.LeaseUntilMs = r.NowMs + lease
	case n < 8:
		// Equal to the stored lease, or a late renewal one millisecond
		// below it or above it.
		r.LeaseUntilMs = g.near(cur.LeaseUntilMs, 0)
	default:
		r.LeaseUntilMs = g.near(cur.LeaseUntilMs, lease)
	}
	return r
}

func (g *generator) release(k int) lockcore.ReleaseRequest {
	r := lockcore.ReleaseRequest{Revision: g.holderRev(k), NowMs: g.now()}
	r.Result = pick(g, lockcore.Success, lockcore.Success, lockcore.Failure)
	if cur := g.keys[k].item; cur != nil && cur.Released && g.chance(0.5) {
		r.Result = cur.Result // the SDK's retry of an applied release
	}
	if g.chance(0.9) {
		r.ResultRef = "ref-" + r.Revision
	}
	return r
}

// invalidate makes o a request every store must refuse before any
// condition: an empty revision, or a release with an unknown result.
func (g *generator) invalidate(o *op) {
	switch o.kind {
	case opAcquire:
		o.acquire.Revision = ""
	case opRenew:
		o.renew.Revision = ""
	case opRelease:
		if g.chance(0.5) {
			o.release.Revision = ""
		} else {
			o.release.Result = "maybe"
		}
	}
}
