package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// AbandonedTrial is one abandoned-holder trial: a holder acquires, starts
// its work, and dies (it never renews or releases again) while waiters
// wait.
type AbandonedTrial struct {
	// NextHolderMs is the time from the death to the next holder starting
	// its work; -1 when nobody acquired the lock again.
	NextHolderMs float64 `json:"deathToNextHolderMs"`
	// WaitersReturn is the waiters' time from the death to their return.
	WaitersReturn Summary         `json:"deathToWaiterReturn"`
	Outcomes      map[Outcome]int `json:"outcomes"`
	// EmptyReleased counts waiters that returned RELEASED with nothing
	// stored.
	EmptyReleased int      `json:"emptyReleased"`
	Upstream      int      `json:"upstreamCalls"`
	Errors        []string `json:"errors,omitempty"`
}

// AbandonedResult is figure 4 for one side.
type AbandonedResult struct {
	Side    string           `json:"side"`
	LeaseMs float64          `json:"leaseMs"`
	PollMs  float64          `json:"pollMs"`
	Waiters int              `json:"waiters"`
	Trials  []AbandonedTrial `json:"trials"`
	// NextHolder summarises NextHolderMs over the trials that had one.
	NextHolder    Summary `json:"deathToNextHolder"`
	EmptyReleased int     `json:"emptyReleasedTotal"`
	Released      int     `json:"releasedTotal"`
}

// RunAbandoned runs trials of side's abandoned-holder experiment with
// waiters waiters. The holder dies at a random moment between dieAfter and
// dieAfter+spread after it acquired.
func RunAbandoned(ctx context.Context, env *Env, side Side, waiters, trials int, dieAfter, spread time.Duration) AbandonedResult {
	r := AbandonedResult{Side: side.Name, Waiters: waiters}
	var next []float64
	for t := range trials {
		tr := abandonedTrial(ctx, env, side, waiters, t, dieAfter+rand.N(spread+1))
		r.Trials = append(r.Trials, tr)
		if tr.NextHolderMs >= 0 {
			next = append(next, tr.NextHolderMs)
		}
		r.EmptyReleased += tr.EmptyReleased
		r.Released += tr.Outcomes[Released]
	}
	r.NextHolder = Summarize(next)
	return r
}

func abandonedTrial(ctx context.Context, env *Env, side Side, waiters, t int, dieAt time.Duration) AbandonedTrial {
	key := keyName(fmt.Sprintf("abandoned-%s-%d", side.Name, t))
	holder := env.NewActor()
	var (
		upstream atomic.Int64
		stored   atomic.Bool
		mu       sync.Mutex
		deathAt  time.Time
		nextAt   []time.Time
	)
	acquired := make(chan struct{})
	died := make(chan struct{})
	holderDone := make(chan Invocation, 1)
	go func() {
		holderDone <- side.Invoke(ctx, holder, key, 0, func() error {
			upstream.Add(1)
			close(acquired)
			time.Sleep(dieAt)
			holder.Kill()
			mu.Lock()
			deathAt = time.Now()
			mu.Unlock()
			close(died)
			return errDied
		})
	}()
	tr := AbandonedTrial{NextHolderMs: -1, Outcomes: map[Outcome]int{}}
	select {
	case <-acquired:
	case inv := <-holderDone:
		tr.Errors = append(tr.Errors, fmt.Sprintf("holder did not acquire: %s %v", inv.Outcome, inv.Err))
		return tr
	}

	type ret struct {
		inv   Invocation
		at    time.Time
		empty bool
	}
	rets := make([]ret, waiters)
	var wg sync.WaitGroup
	for i := range waiters {
		a := env.NewActor()
		wg.Add(1)
		go func() {
			defer wg.Done()
			inv := side.Invoke(ctx, a, key, i+1, func() error {
				mu.Lock()
				nextAt = append(nextAt, time.Now())
				mu.Unlock()
				upstream.Add(1)
				time.Sleep(HerdWork)
				stored.Store(true)
				return nil
			})
			rets[i] = ret{inv: inv, at: time.Now(), empty: inv.Outcome == Released && !stored.Load()}
		}()
	}
	wg.Wait()
	<-died
	<-holderDone

	var back []float64
	for _, rt := range rets {
		tr.Outcomes[rt.inv.Outcome]++
		if rt.empty {
			tr.EmptyReleased++
		}
		if rt.inv.Err != nil && len(tr.Errors) < 5 {
			tr.Errors = append(tr.Errors, rt.inv.Err.Error())
		}
		back = append(back, ms(rt.at.Sub(deathAt)))
	}
	tr.WaitersReturn = Summarize(back)
	tr.Upstream = int(upstream.Load())
	for _, at := range nextAt {
		if d := ms(at.Sub(deathAt)); tr.NextHolderMs < 0 || d < tr.NextHolderMs {
			tr.NextHolderMs = d
		}
	}
	return tr
}
