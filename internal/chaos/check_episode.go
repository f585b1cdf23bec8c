package chaos

import (
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"
)

// attemptRec is one attempt of a failure episode: a holder that called the
// upstream and whose Failure release was applied at the store.
type attemptRec struct {
	g     *grant
	fetch Fetch   // its first upstream call
	rel   StoreOp // its first applied Failure release
}

// hasNotBefore reports whether the attempt's published failure carries a
// not-before.
func (at *attemptRec) hasNotBefore() bool { return at.rel.Intent.NotBefore != 0 }

// publishedRetryAfter reports whether the attempt's applied failure release
// is the holder's own, which carries the upstream's Retry-After (the worker
// names its reason after the upstream's status), and not one the lock made
// by itself with a reason of its own (lease_lost, max_hold, ...).
func (at *attemptRec) publishedRetryAfter() bool {
	return at.rel.Intent.Reason == "upstream_"+strconv.Itoa(at.fetch.Status)
}

// checkEpisodes is check 6: no burst calls the upstream more often than
// the failure policy allows (docs/protocol.md, "The failure policy"). Per
// key, the attempts (holders that called the upstream and published a
// failure) are chained into episodes the way lockcore's items define them:
// an attempt belongs to the episode of the one before it when it called
// the upstream while that failure was surely still recent (its published
// recent-until, mapped to true time, less twice the skew bound), and no
// success or operator release came between. A holder that crashed before
// publishing is no attempt of the episode (it wrote nothing the next holder
// could count).
//
//   - Failures with a not-before (an upstream's Retry-After, or the
//     hold-back of an exhausted episode): no holder granted after the
//     failure calls the upstream before the not-before its release
//     published (the failed call's time plus the Retry-After when the
//     holder's own release carried it, else the published time, less
//     twice the skew bound: a Retry-After told to a holder whose lock
//     ended the hold before its release was never published); after it, the next holder's call is the one attempt of
//     that not-before, and it opens a new block of unpaced attempts. That
//     only one holder at a time calls is checks 2 and 4; a holder that
//     crashed after its call publishes nothing, and the one after it tries
//     again.
//   - Failures without a not-before: the next attempt may start at once,
//     and counts in the same block. A block has at most Config.MaxAttempts
//     attempts: the attempt that makes it full publishes a hold-back (or a
//     Retry-After), whatever it failed with.
func (a *analysis) checkEpisodes() {
	r := a.rep
	grantOf := map[string]*grant{}
	for _, gs := range a.grants {
		for _, g := range gs {
			if _, ok := grantOf[g.rev]; !ok {
				grantOf[g.rev] = g
			}
		}
	}
	fetchOf := map[string]Fetch{}
	fetches := map[string][]Fetch{}
	for _, f := range a.rec.fetches {
		if f.Rev == "" {
			continue
		}
		if _, ok := fetchOf[f.Rev]; !ok {
			fetchOf[f.Rev] = f
		}
		fetches[f.Key] = append(fetches[f.Key], f)
		if !isHerdKey(f.Key) {
			r.UpstreamCalls++
			if f.Status != http.StatusOK {
				r.UpstreamFailed++
			}
		}
	}
	failRel := map[string]StoreOp{}
	clears := map[string][]int64{} // key -> Call of applied Success and operator releases
	for _, op := range a.rec.ops {
		in := op.Intent
		if op.Status != http.StatusOK || in == nil || (in.Op != "release" && in.Op != "op-release") {
			continue
		}
		if in.Op == "release" && in.Result == "failure" {
			if f, ok := failRel[in.Rev]; !ok || op.Call < f.Call {
				failRel[in.Rev] = op
			}
			continue
		}
		clears[in.Key] = append(clears[in.Key], op.Call)
	}
	attempts := map[string][]*attemptRec{}
	for rev, rel := range failRel {
		g, f := grantOf[rev], fetchOf[rev]
		if g == nil || f.Rev == "" {
			continue
		}
		attempts[g.key] = append(attempts[g.key], &attemptRec{g: g, fetch: f, rel: rel})
	}
	keys := make([]string, 0, len(attempts))
	for k := range attempts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, key := range keys {
		ats := attempts[key]
		sort.Slice(ats, func(i, j int) bool { return ats[i].g.fence < ats[j].g.fence })
		a.chainEpisodes(key, ats, clears[key])
		for _, at := range ats {
			if at.hasNotBefore() {
				a.checkNotBefore(key, at, fetches[key], grantOf, clears[key])
			}
		}
	}
}

// chainEpisodes chains key's attempts, in fence order, into episodes and
// checks each block of unpaced attempts against the maximum.
func (a *analysis) chainEpisodes(key string, ats []*attemptRec, clears []int64) {
	r := a.rep
	var prev *attemptRec
	block := 0
	for _, at := range ats {
		same := prev != nil && at.fetch.T < a.wallToMono(prev.rel.Intent.RecentTill)-a.pairSkew(prev.rel.Call, at.fetch.T) &&
			!anyIn(clears, prev.fetch.T, at.fetch.T)
		switch {
		case !same:
			r.Episodes++
			block = 1
		case prev.hasNotBefore():
			block = 1
		default:
			block++
		}
		r.EpisodeMaxBlock = max(r.EpisodeMaxBlock, block)
		if block == a.cfg.MaxAttempts+1 {
			a.violate(CheckEpisode, "key %s: upstream call %d in a row without a not-before by w%d (fence %d, +%v), the maximum is %d",
				key, block, at.g.worker, at.g.fence, a.since(at.fetch.T), a.cfg.MaxAttempts)
		}
		prev = at
	}
}

// checkNotBefore checks that no holder granted after at's failure, which
// carries a not-before, calls the upstream before it: the not-before its
// applied release published. When that release is the holder's own, with
// the upstream's Retry-After, that is the failed call's time plus the
// Retry-After; otherwise (a hold-back) the published time. A holder whose
// lock ended the hold by itself before its release (lease lost, the hard
// maximum) publishes nothing of its own: the lock's release, with its own
// reason, is the applied one, and the Retry-After the holder was told
// never reached the item (lockcore's Release: "the lock ended before
// release"), so only the lock's hold-back binds the next holder.
func (a *analysis) checkNotBefore(key string, at *attemptRec, fetches []Fetch, grantOf map[string]*grant, clears []int64) {
	notBefore, what := at.fetch.T+int64(at.fetch.RetryAfter), "Retry-After "+at.fetch.RetryAfter.String()
	if at.fetch.RetryAfter == 0 || !at.publishedRetryAfter() {
		a.rep.HoldBacks++
		notBefore, what = a.wallToMono(at.rel.Intent.NotBefore), "hold-back"
		if at.fetch.RetryAfter != 0 {
			what += " of the lock's own release (" + at.rel.Intent.Reason + "; the Retry-After " + at.fetch.RetryAfter.String() + " was not published)"
		}
	}
	a.rep.NotBeforeChecked++
	for _, f := range fetches {
		g := grantOf[f.Rev]
		if g == nil || g.fence <= at.g.fence || f.T <= at.rel.Call || anyIn(clears, at.rel.Call, f.T) {
			continue
		}
		if early := notBefore - a.pairSkew(at.rel.Call, f.T) - f.T; early > 0 {
			a.violate(CheckEpisode, "key %s: w%d (fence %d) called the upstream %v before the not-before of w%d's failure (%s)",
				key, f.Worker, g.fence, time.Duration(early), at.g.worker, what)
		}
	}
}

// anyIn reports whether a time of ts lies in [from, to].
func anyIn(ts []int64, from, to int64) bool {
	for _, t := range ts {
		if t >= from && t <= to {
			return true
		}
	}
	return false
}

// wallToMono maps a wall-clock time in Unix milliseconds to true time.
func (a *analysis) wallToMono(ms int64) int64 { return ms*int64(time.Millisecond) - a.wallBase }

// pairSkew bounds how far apart two workers' wall clocks can be, one at
// true time t1 and one at t2, plus a margin for the host's clocks.
func (a *analysis) pairSkew(t1, t2 int64) int64 {
	return int64(a.skewBound(t1) + a.skewBound(t2) + 50*time.Millisecond)
}

// skewBound bounds how far a worker's wall clock is from the true one at
// true time t: the offset, steps and drift of its phase's range.
func (a *analysis) skewBound(t int64) time.Duration {
	r := a.cfg.skewRange(a.phaseKind(t))
	elapsed := max(t-a.cfg.Phases[0].Start, 0) + int64(2*time.Second)
	return time.Duration(r.OffsetMs+r.StepMs*int64(r.Steps))*time.Millisecond + time.Duration(r.DriftPPM*1e-6*float64(elapsed))
}

func (a *analysis) since(t int64) time.Duration { return time.Duration(t - a.cfg.Phases[0].Start) }

// isHerdKey reports whether pk is the key of a herd round.
func isHerdKey(pk string) bool { return strings.HasPrefix(pk, lockGroup+"/herd.") }
