package bench

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"sort"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/middleware/lockmw"
)

// Handoff figure: on one key, episode after episode, a holder
// acquires, holds and releases with success, while a few waiters that
// arrive 10 ms after its acquire wait for it. It measures how soon after
// the holder's Release returned the waiters return, and how many reads
// each makes, for two holds (steady: 300 ms ± 10 %; erratic: exponential,
// mean 300 ms, capped at 3 s) and two paces: lockcore's predictive waiting
// (the default) and its fixed pace (the same lock over a client that hides
// the hold history, see [Blind]). The two paces run interleaved, episode by
// episode, on two keys, with the same hold times.
const (
	HandoffSteady  = "steady"
	HandoffErratic = "erratic"

	PacePredictive = "predictive"
	PaceFixed      = "fixed"

	// HandoffArrival is when the waiters arrive, after the holder's
	// acquire returned.
	HandoffArrival = 10 * time.Millisecond
	// HandoffFrom is the first episode (counting from 1) of the figures:
	// the first two build the key's hold history.
	HandoffFrom = 3
)

// HandoffResult is one (holds, pace) series of the handoff figure.
type HandoffResult struct {
	Holds    string `json:"holds"`
	Pace     string `json:"pace"`
	Episodes int    `json:"episodes"`
	Waiters  int    `json:"waiters"`
	From     int    `json:"fromEpisode"`
	// Lag is, over the waiters of episodes From to Episodes, the time
	// from the holder's Release returning to the waiter's return (a
	// waiter may return a little before Release does: negative).
	Lag Summary `json:"releaseReturnedToReturn"`
	// EpisodeP50 is each episode's median lag, from the first episode.
	EpisodeP50 []float64 `json:"episodeP50Ms"`
	// ReadsPerWaiter is the mean of GetItem requests per waiter, and
	// MaxReads the most of one waiter, over the same episodes;
	// RequestsPerWaiter counts every request.
	ReadsPerWaiter    float64  `json:"readsPerWaiter"`
	MaxReads          int      `json:"maxReads"`
	RequestsPerWaiter float64  `json:"requestsPerWaiter"`
	HoldsMs           []int    `json:"holdsMs"`
	Errors            []string `json:"errors,omitempty"`
}

// HandoffHolds returns episodes hold times of kind holds, from seed.
func HandoffHolds(holds string, episodes int, seed uint64) []time.Duration {
	rng := rand.New(rand.NewPCG(seed, 23))
	out := make([]time.Duration, episodes)
	for i := range out {
		switch holds {
		case HandoffErratic:
			out[i] = min(time.Duration(rng.ExpFloat64()*float64(300*time.Millisecond))+time.Millisecond, 3*time.Second)
		default:
			out[i] = time.Duration(270+rng.IntN(61)) * time.Millisecond
		}
	}
	return out
}

// handoffSeries is one pace's key and execution environments: a holder and
// the waiters, each with its own SDK client and store, kept across
// episodes as Lambda keeps warm environments.
type handoffSeries struct {
	pace    string
	key     string
	holder  *lockcore.DynamoStore
	waiters []*Actor
	stores  []*lockcore.DynamoStore
	res     HandoffResult
	lags    []float64
	reads   int
	reqs    int
	counted int
}

func newHandoffSeries(env *Env, holds, pace string, waiters int) (*handoffSeries, error) {
	s := &handoffSeries{pace: pace, key: keyName("handoff-" + holds + "-" + pace)}
	store := func(a *Actor) (*lockcore.DynamoStore, error) {
		api := a.API.(StoreAPI)
		if pace == PaceFixed {
			api = Blind(api)
		}
		return lockcore.NewDynamoStore(api, LockTable)
	}
	var err error
	if s.holder, err = store(env.NewActor()); err != nil {
		return nil, err
	}
	for range waiters {
		a := env.NewActor()
		st, err := store(a)
		if err != nil {
			return nil, err
		}
		s.waiters, s.stores = append(s.waiters, a), append(s.stores, st)
	}
	return s, nil
}

// RunHandoff runs the handoff figure for holds: episodes episodes of
// waiters waiters, the two paces interleaved. seed picks the hold times.
func RunHandoff(ctx context.Context, env *Env, holds string, episodes, waiters int, seed uint64) ([]HandoffResult, error) {
	times := HandoffHolds(holds, episodes, seed)
	var series []*handoffSeries
	for _, pace := range []string{PacePredictive, PaceFixed} {
		s, err := newHandoffSeries(env, holds, pace, waiters)
		if err != nil {
			return nil, err
		}
		s.res = HandoffResult{Holds: holds, Pace: pace, Episodes: episodes, Waiters: waiters, From: HandoffFrom}
		for _, d := range times {
			s.res.HoldsMs = append(s.res.HoldsMs, int(d/time.Millisecond))
		}
		series = append(series, s)
	}
	for i, hold := range times {
		for _, s := range series {
			if err := s.episode(ctx, i, hold); err != nil {
				return nil, err
			}
		}
	}
	out := make([]HandoffResult, len(series))
	for i, s := range series {
		s.res.Lag = Summarize(s.lags)
		if s.counted > 0 {
			s.res.ReadsPerWaiter = float64(s.reads) / float64(s.counted)
			s.res.RequestsPerWaiter = float64(s.reqs) / float64(s.counted)
		}
		sort.Strings(s.res.Errors)
		out[i] = s.res
	}
	return out, nil
}

// episode runs episode i (from 0) of s with a hold of hold.
func (s *handoffSeries) episode(ctx context.Context, i int, hold time.Duration) error {
	fresh := lockcore.WithFreshSuccess(lockmw.DefaultFreshSuccess)
	holder, err := newLock(s.holder, s.key, 0, fresh)
	if err != nil {
		return err
	}
	if ok, err := holder.Acquire(ctx); !ok || err != nil {
		return fmt.Errorf("bench: handoff %s episode %d: holder's acquire: %v, %v", s.pace, i+1, ok, err)
	}
	acquired := time.Now()
	type ret struct {
		at    time.Time
		res   lockcore.WaitResult
		err   error
		reads int
		reqs  int
	}
	rets := make([]ret, len(s.waiters))
	var wg sync.WaitGroup
	for w, a := range s.waiters {
		wg.Go(func() {
			time.Sleep(time.Until(acquired.Add(HandoffArrival)))
			snap := a.Counter.Snapshot()
			l, err := newLock(s.stores[w], s.key, w+1, fresh)
			if err != nil {
				rets[w] = ret{err: err}
				return
			}
			wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			res, err := l.TryAcquireElseWaitForRelease(wctx)
			at := time.Now()
			d := a.Counter.Since(snap)
			rets[w] = ret{at: at, res: res, err: err, reads: d.ByOp["GetItem"], reqs: d.Total}
		})
	}
	time.Sleep(hold)
	if err := holder.Release(ctx, lockcore.Success, "ref"); err != nil {
		return fmt.Errorf("bench: handoff %s episode %d: release: %w", s.pace, i+1, err)
	}
	released := time.Now()
	wg.Wait()
	var lags []float64
	for _, r := range rets {
		if r.err != nil || r.res.Outcome != lockcore.Released {
			if len(s.res.Errors) < 5 {
				s.res.Errors = append(s.res.Errors, fmt.Sprintf("episode %d: waiter: %v, %v", i+1, r.res.Outcome, r.err))
			}
			continue
		}
		lag := ms(r.at.Sub(released))
		lags = append(lags, lag)
		if i+1 >= HandoffFrom {
			s.lags = append(s.lags, lag)
			s.reads += r.reads
			s.reqs += r.reqs
			s.counted++
			s.res.MaxReads = max(s.res.MaxReads, r.reads)
		}
	}
	s.res.EpisodeP50 = append(s.res.EpisodeP50, Summarize(lags).P50)
	return nil
}

// WriteHandoffTable prints the handoff series, one row each.
func WriteHandoffTable(w io.Writer, rs []HandoffResult) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "holds\tpace\tepisodes\twaiters\tfigures over\tRelease returned → return p50/p99/max ms\treads/waiter (most)\trequests/waiter\terrors")
	for _, r := range rs {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d-%d\t%.1f/%.1f/%.1f\t%.2f (%d)\t%.2f\t%d\n", r.Holds, r.Pace, r.Episodes, r.Waiters, r.From, r.Episodes,
			r.Lag.P50, r.Lag.P99, r.Lag.Max, r.ReadsPerWaiter, r.MaxReads, r.RequestsPerWaiter, len(r.Errors))
	}
	return tw.Flush()
}
