package storetest

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/lockcore/storeapi"
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
	item *storeapi.Item // as the reference last reported it; nil: none yet
	revs []string       // every revision drawn for this key
	// announced is the highest fence the reference applied on each
	// shard; 0: none yet.
	announced [genShards]int64
}

// genShards is how many announcement shards the generator uses per key.
const genShards = 3

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
	if o.kind == opAnnounce && ref.class != classError && ref.applied && o.ann.Shard >= 0 && o.ann.Shard < genShards {
		a := &g.keys[o.key].announced[o.ann.Shard]
		*a = max(*a, o.ann.Fence)
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
	retired := g.chance(0.005)
	if retired {
		// Retire the slot's key, as a TTL deletion would, for a new one:
		// steps on an absent item, and FenceBase on a new item, recur
		// through the run.
		g.slots[slot] = len(g.keys)
		g.keys = append(g.keys, keyState{})
	}
	k := g.slots[slot]
	o := op{key: k}
	switch n := g.rng.IntN(100); {
	case retired && n < 30:
		// A read of the key just retired, before anything writes it:
		// otherwise a run of 10,000 steps has about five of these, and
		// one in a hundred and fifty runs none.
		o.kind = opGet
	case n < 40:
		o.kind, o.acquire = opAcquire, g.acquire(k)
	case n < 62:
		o.kind, o.renew = opRenew, g.renew(k)
	case n < 89:
		o.kind, o.release = opRelease, g.release(k)
	case n < 93:
		o.kind, o.ann = opAnnounce, g.announcement(k)
	case n < 96:
		o.kind, o.ann = opGetAnnouncement, storeapi.Announcement{Shard: g.rng.IntN(genShards)}
	default:
		o.kind = opGet
	}
	if g.chance(0.015) && g.invalidate(&o) {
		// An item over the size limit is the key's last step: servers
		// without the limit store it, and the run goes on without it.
		g.slots[slot] = len(g.keys)
		g.keys = append(g.keys, keyState{})
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

func (g *generator) acquire(k int) storeapi.AcquireRequest {
	cur := g.keys[k].item
	var rev string
	switch n := g.rng.IntN(100); {
	case n < 4 && cur != nil:
		rev = cur.Revision // the SDK's retry of an applied acquire, or a late copy after a release
	case n < 8:
		rev = g.otherRev(k)
	default:
		rev = g.newRev(k)
	}
	lease := pick(g, leases...)
	r := storeapi.AcquireRequest{
		Holder:        "owner-" + rev,
		Revision:      rev,
		Lease:         lease,
		RecordAccount: pick(g, account, account, "act:210987654321/app:9", ""),
	}
	if g.chance(0.05) {
		r.Holder = "" // DynamoDB stores empty strings outside keys
	}
	if g.chance(0.5) {
		r.UseWallClock = true
		r.ClockAllowance = pick(g, allowances...)
	}
	r.NowMs = g.now()
	if g.chance(0.5) {
		r.MaxAttempts = pick[int64](g, 1, 2, 3)
	}
	switch {
	case cur != nil && cur.Released && cur.Result == lockcore.Failure && r.MaxAttempts > 0 && g.chance(0.6):
		// The held-back guard compares now with the failure's
		// not-before and recent-until times: aim at either.
		end := cur.FailRecentUntilMs
		if cur.NotBeforeMs != 0 && g.chance(0.5) {
			end = cur.NotBeforeMs
		}
		r.NowMs = g.near(end, 2_000)
	case cur != nil && r.UseWallClock && g.chance(0.6):
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
func (g *generator) observation(k int) *storeapi.Observation {
	cur := g.keys[k].item
	if cur == nil {
		return &storeapi.Observation{Revision: g.otherRev(k), Beat: g.rng.Int64N(3)}
	}
	o := &storeapi.Observation{Revision: cur.Revision, Beat: cur.Beat}
	switch n := g.rng.IntN(20); {
	case n < 10:
	case n < 16:
		o.Beat += pick[int64](g, -1, 1)
	case n < 19:
		o.Revision = g.otherRev(k)
	default:
		o.Revision = ""
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

func (g *generator) renew(k int) storeapi.RenewRequest {
	r := storeapi.RenewRequest{Revision: g.holderRev(k), NowMs: g.now()}
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

func (g *generator) release(k int) storeapi.ReleaseRequest {
	r := storeapi.ReleaseRequest{Revision: g.holderRev(k), NowMs: g.now()}
	r.Result = pick(g, lockcore.Success, lockcore.Success, lockcore.Failure)
	cur := g.keys[k].item
	switch {
	case cur != nil && cur.Released && g.chance(0.5):
		r.Result = cur.Result // the SDK's retry of an applied release
	case cur != nil && cur.PrevRevision != "" && g.chance(0.1):
		// The retry of a release that was applied before a newcomer
		// acquired (or, with the other result, one that was not).
		r.Revision, r.Result = cur.PrevRevision, cur.PrevResult
		if r.Result == "" || g.chance(0.2) {
			r.Result = pick(g, lockcore.Success, lockcore.Failure)
		}
	case cur != nil && cur.PublishedRevision != "" && g.chance(0.1):
		// The retry of the last publication, recorded on the item,
		// after any number of acquisitions (or, with the other
		// result, one that was not applied).
		r.Revision, r.Result = cur.PublishedRevision, cur.PublishedResult
		if g.chance(0.2) {
			r.Result = pick(g, lockcore.Success, lockcore.Failure)
		}
	}
	if g.chance(0.9) {
		r.ResultRef = "ref-" + r.Revision
	}
	if g.chance(0.6) {
		// A holder's release folds its hold into the key's history; the
		// freeing of a ghost and an operator's release leave it (zero).
		r.HoldMeanMs = pick[int64](g, 1, 300, 2_999, 60_000)
		r.HoldDevMs = pick[int64](g, 0, 1, 75, 1_000)
	}
	if r.Result == lockcore.Success {
		if g.chance(0.5) {
			r.Answer = g.bytes(pick(g, 0, 1, 16, 700))
		}
		return r
	}
	r.Failures = g.rng.Int64N(4)
	if cur != nil && g.chance(0.5) {
		r.Failures = cur.Failures + 1
	}
	switch {
	case g.chance(0.4):
		// Paced: the upstream's not-before.
		r.NotBeforeMs = r.NowMs + pick[int64](g, 0, 1, 500, 2_000, 10_000)
	case g.chance(0.3):
		// The hold-back of an exhausted episode: the window, doubled.
		r.NotBeforeMs = r.NowMs + pick(g, leases...).Milliseconds()<<g.rng.IntN(4)
	}
	r.FailReason = pick(g, "unspecified", "handler_error", "upstream_429", "lease_lost", "")
	r.FailRecentUntilMs = max(r.NotBeforeMs, r.NowMs) + pick(g, leases...).Milliseconds()
	if g.chance(0.1) {
		r.FailRecentUntilMs = r.NowMs - g.rng.Int64N(1_000) // a window already over
	}
	switch {
	case g.chance(0.15):
		// Freeing a possible ghost (nobody held it: the record of the
		// last publication stays too), or a holder's release that made
		// no attempt: the item's episode stays, whatever the request's
		// fields say.
		r.KeepEpisode, r.Unheld = true, g.chance(0.5)
	case g.chance(0.15):
		// An operator's force-release, as herdlock release writes it:
		// the episode's attempts, no not-before, not recent. Other
		// failure releases of its revision come after it.
		r.FailReason, r.NotBeforeMs, r.FailRecentUntilMs = storeapi.OperatorReleaseReason, 0, 0
		if cur != nil {
			r.Failures = cur.Failures
		}
	}
	return r
}

// announcement returns an announcement of key k, on one of three shards,
// at a fence near the item's (so that later, equal and earlier fences
// meet), as a waiter relays it; sometimes an invalid one.
func (g *generator) announcement(k int) storeapi.Announcement {
	fence := int64(1 + g.rng.IntN(4))
	if cur := g.keys[k].item; cur != nil {
		fence = max(cur.Fence+int64(g.rng.IntN(3))-1, 1)
	}
	shard := g.rng.IntN(genShards)
	if g.chance(0.7) {
		// On a shard that holds one, at the edge of its fence: an
		// earlier, the same or a later fence.
		var held []int
		for i, f := range g.keys[k].announced {
			if f > 0 {
				held = append(held, i)
			}
		}
		if len(held) > 0 {
			shard = pick(g, held...)
			fence = max(g.keys[k].announced[shard]+int64(g.rng.IntN(3))-1, 1)
		}
	}
	a := storeapi.Announcement{Shard: shard, Fence: fence, ResultRef: "ref-" + strconv.FormatInt(fence, 10),
		ReleasedAtMs: g.now(), TTL: pick[int64](g, 0, g.now()/1000+3_600)}
	switch {
	case g.chance(0.3):
		a.Answer = g.bytes(pick(g, 1, 16, storeapi.MaxAnnouncedAnswerBytes))
	case g.chance(0.2):
		a.AnswerOmitted = true
	}
	switch {
	case g.chance(0.03):
		a.Fence = 0
	case g.chance(0.03):
		a.Shard = storeapi.MaxAnnounceShards
	case g.chance(0.03):
		a.ResultRef = "bad\xff"
	}
	return a
}

// bytes returns n random bytes.
func (g *generator) bytes(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(g.rng.Uint32())
	}
	return b
}

// invalidate makes o a request every store must refuse, before any
// condition or with DynamoDB's validation error: an empty revision, a
// string that is not UTF-8, a release with an unknown result, an answer
// with a failure or over the limit, an unheld success, an item over DynamoDB's size limit. It
// reports whether o is the last (the item would be too large).
func (g *generator) invalidate(o *op) (oversized bool) {
	const notUTF8 = "bad\xff"
	switch o.kind {
	case opAcquire:
		switch g.rng.IntN(3) {
		case 0:
			o.acquire.Revision = ""
		case 1:
			o.acquire.Holder = notUTF8
		default:
			o.acquire.RecordAccount = notUTF8
		}
	case opRenew:
		o.renew.Revision = ""
	case opRelease:
		r := &o.release
		switch g.rng.IntN(9) {
		case 0:
			r.Revision = ""
		case 6:
			r.HoldMeanMs, r.HoldDevMs = 300, -1
		case 1:
			r.Result = "maybe"
		case 2:
			r.ResultRef = notUTF8
		case 3:
			r.Result, r.FailReason = lockcore.Failure, notUTF8
		case 4:
			r.Result, r.Answer = lockcore.Failure, []byte("answer")
		case 5:
			r.Result, r.Answer = lockcore.Success, make([]byte, lockcore.MaxAnswerBytes+1)
		case 7:
			// The freeing of a write nobody held is a failure that
			// keeps the episode.
			r.Result, r.Answer, r.Unheld = lockcore.Success, nil, true
		default:
			// An answer within its own limit, and a reference that takes
			// the item past DynamoDB's 400 KB.
			r.Result, r.Answer = lockcore.Success, make([]byte, lockcore.MaxAnswerBytes)
			r.ResultRef = strings.Repeat("r", storeapi.MaxItemBytes-lockcore.MaxAnswerBytes+1_000)
			return true
		}
	}
	return false
}
