package bench

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// HerdWork is how long the holder of a herd works (its upstream call).
const HerdWork = 300 * time.Millisecond

// HerdResult is one herd: N concurrent invocations on one key, each with its
// own lock, the holder working HerdWork.
type HerdResult struct {
	Side string `json:"side"`
	N    int    `json:"n"`
	// Upstream is how many invocations did the work (the upstream call).
	Upstream int             `json:"upstreamCalls"`
	Outcomes map[Outcome]int `json:"outcomes"`
	// EmptyReleased counts waiters that returned RELEASED before any
	// result was stored.
	EmptyReleased int `json:"emptyReleased"`
	// Latency is the waiters' time from the holder's release call to
	// their return.
	Latency   Summary   `json:"releaseToReturn"`
	LatencyMs []float64 `json:"releaseToReturnMs"`
	Requests  Delta     `json:"requests"`
	// PeakReadRate is the largest count of reads on the lock item in any
	// 100 ms window, times 10; fallback reads (see Counter) excluded.
	PeakReadRate float64 `json:"peakReadsPerSec"`
	// MeanReadRate is the reads on the lock item (fallback reads
	// excluded) divided by the time from the first to the last.
	MeanReadRate float64 `json:"meanReadsPerSec"`
	// ReleaseAtMs is when the holder called Release, from the herd's
	// start; ReleaseCallMs is how long that call took.
	ReleaseAtMs   float64 `json:"releaseAtMs"`
	ReleaseCallMs float64 `json:"releaseCallMs"`
	// FirstResponse is, per invocation, the time from the herd's start
	// to the answer of its first request (its first acquire attempt for
	// herdlock, its first read for the baseline).
	FirstResponse Summary  `json:"firstResponse"`
	MeanPolls     float64  `json:"meanPollsPerWaiter"`
	WallMs        float64  `json:"wallMs"`
	Errors        []string `json:"errors,omitempty"`
}

// ReadWindow is the window of the peak read rate.
const ReadWindow = 100 * time.Millisecond

// RunHerd starts n invocations of side at once on a fresh key and waits
// for all of them.
func RunHerd(ctx context.Context, env *Env, side Side, n int) HerdResult {
	key := keyName(fmt.Sprintf("herd-%s-%d", side.Name, n))
	actors := make([]*Actor, n)
	for i := range actors {
		actors[i] = env.NewActor()
	}
	var (
		upstream atomic.Int64
		stored   atomic.Bool
		relMu    sync.Mutex
		relAt    []time.Time // release calls of holders
	)
	work := func() error {
		upstream.Add(1)
		time.Sleep(HerdWork)
		stored.Store(true) // the holder stores the result before releasing
		relMu.Lock()
		relAt = append(relAt, time.Now())
		relMu.Unlock()
		return nil
	}
	type ret struct {
		inv   Invocation
		at    time.Time
		empty bool
	}
	rets := make([]ret, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			inv := side.Invoke(ctx, actors[i], key, i, work)
			rets[i] = ret{inv: inv, at: time.Now(), empty: inv.Outcome == Released && !stored.Load()}
		}()
	}
	snap := env.Counter.Snapshot()
	close(start)
	wg.Wait()

	r := HerdResult{Side: side.Name, N: n, Upstream: int(upstream.Load()), Outcomes: map[Outcome]int{}}
	r.WallMs = ms(time.Since(snap.At))
	r.Requests = env.Counter.Since(snap)
	r.PeakReadRate, r.MeanReadRate = env.Counter.ReadRates(snap, ReadWindow)
	var first []float64
	for _, a := range actors {
		if t := a.Counter.FirstDone(); !t.IsZero() {
			first = append(first, ms(t.Sub(snap.At)))
		}
	}
	r.FirstResponse = Summarize(first)
	polls, waiters := 0, 0
	for _, rt := range rets {
		r.Outcomes[rt.inv.Outcome]++
		if rt.inv.Err != nil && len(r.Errors) < 5 {
			r.Errors = append(r.Errors, rt.inv.Err.Error())
		}
		if rt.empty {
			r.EmptyReleased++
		}
		if rt.inv.Outcome == Acquired || rt.inv.Outcome == TookOver {
			if last, ok := lastBefore(relAt, rt.at); ok {
				r.ReleaseAtMs, r.ReleaseCallMs = ms(last.Sub(snap.At)), ms(rt.at.Sub(last))
			}
		}
		if rt.inv.Outcome != Released {
			continue
		}
		waiters++
		polls += rt.inv.Polls
		if last, ok := lastBefore(relAt, rt.at); ok {
			r.LatencyMs = append(r.LatencyMs, ms(rt.at.Sub(last)))
		}
	}
	if waiters > 0 {
		r.MeanPolls = float64(polls) / float64(waiters)
	}
	r.Latency = Summarize(r.LatencyMs)
	return r
}

// lastBefore returns the latest of ts not after t.
func lastBefore(ts []time.Time, t time.Time) (time.Time, bool) {
	var best time.Time
	ok := false
	for _, x := range ts {
		if !x.After(t) && (!ok || x.After(best)) {
			best, ok = x, true
		}
	}
	return best, ok
}
