package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/herdlock/herdlock/internal/seedlock"
	"github.com/herdlock/herdlock/lockcore"
)

// OpCount is the DynamoDB requests one operation made.
type OpCount struct {
	Side string `json:"side"`
	Op   string `json:"op"`
	// PerOp is the requests per operation (for a poll: the reads divided
	// by the polls of one wait).
	PerOp    float64 `json:"perOp"`
	Requests Delta   `json:"requests"`
	Note     string  `json:"note,omitempty"`
}

// The operations of figure 1.
const (
	OpAcquire        = "acquire (uncontended)"
	OpRelease        = "release"
	OpAcquireRelease = "acquire + release"
	OpRenew          = "renewal"
	OpPoll           = "one poll"
	OpWaitOverhead   = "per wait, besides polls"
)

func count(side, op string, d Delta, per float64, note string) OpCount {
	return OpCount{Side: side, Op: op, PerOp: per, Requests: d, Note: note}
}

func addDelta(a, b Delta) Delta {
	out := Delta{ByOp: map[string]int{}, Total: a.Total + b.Total, Fallbacks: a.Fallbacks + b.Fallbacks}
	for _, d := range []Delta{a, b} {
		for k, v := range d.ByOp {
			out.ByOp[k] += v
		}
	}
	return out
}

// HerdlockRequests counts the requests of each lockcore operation, each
// through its own actor's Counter.
func HerdlockRequests(ctx context.Context, env *Env) ([]OpCount, error) {
	const side = "herdlock"
	key := keyName("requests-herdlock")
	holder := env.NewActor()
	l, err := newLock(holder.Store, key, 0)
	if err != nil {
		return nil, err
	}
	s := holder.Counter.Snapshot()
	if ok, err := l.Acquire(ctx); err != nil || !ok {
		return nil, fmt.Errorf("herdlock acquire: %v, %v", ok, err)
	}
	acq := holder.Counter.Since(s)
	l.CancelAutoRenewal() // only our own Renew below

	s = holder.Counter.Snapshot()
	if err := l.Renew(ctx); err != nil {
		return nil, fmt.Errorf("herdlock renew: %w", err)
	}
	renew := holder.Counter.Since(s)

	// One waiter on the held lock, released after about five polls.
	waiter := env.NewActor()
	wl, err := newLock(waiter.Store, key, 1)
	if err != nil {
		return nil, err
	}
	ws := waiter.Counter.Snapshot()
	done := make(chan lockcore.WaitResult, 1)
	go func() {
		res, _ := wl.TryAcquireElseWaitForRelease(ctx)
		done <- res
	}()
	time.Sleep(5 * lockcore.DefaultPollInterval)

	s = holder.Counter.Snapshot()
	if err := l.Release(ctx, lockcore.Success, "ref"); err != nil {
		return nil, fmt.Errorf("herdlock release: %w", err)
	}
	rel := holder.Counter.Since(s)
	res := <-done
	wait := waiter.Counter.Since(ws)
	if res.Outcome != lockcore.Released || res.Polls == 0 {
		return nil, fmt.Errorf("herdlock waiter: %v after %d polls, want RELEASED", res.Outcome, res.Polls)
	}
	// The waiter's store is new, so its first request is a read (see
	// lockcore.HotKeys), not one of its polls: a read beyond res.Polls is
	// that first read, counted with the wait's overhead.
	reads := min(wait.ByOp["GetItem"]-wait.Fallbacks, res.Polls)
	pollD := Delta{ByOp: map[string]int{"GetItem": reads}, Total: reads}
	overhead := wait
	overhead.ByOp = map[string]int{"UpdateItem": wait.ByOp["UpdateItem"], "GetItem": wait.ByOp["GetItem"] - reads}
	overhead.Total = wait.Total - reads
	return []OpCount{
		count(side, OpAcquire, acq, float64(acq.Total), "one UpdateItem (ALL_NEW)"),
		count(side, OpRelease, rel, float64(rel.Total), "one UpdateItem conditioned on revision"),
		count(side, OpAcquireRelease, addDelta(acq, rel), float64(acq.Total+rel.Total), ""),
		count(side, OpRenew, renew, float64(renew.Total), "one UpdateItem conditioned on revision"),
		count(side, OpPoll, pollD, float64(reads)/float64(res.Polls),
			fmt.Sprintf("%d consistent GetItem over %d polls", reads, res.Polls)),
		count(side, OpWaitOverhead, overhead, float64(overhead.Total),
			"the first request: a read first on a key the store has not acquired at once within the lease (GetItem; on one it has, the failed first acquire, an UpdateItem that DynamoDB and Dynoxide answer with the item)"),
	}, nil
}

// BaselineRequests counts the requests of each operation of the seed's
// protocol. The seed has no public renewal call: its keeper renews every
// max(500 ms, lease/3), so renewals are counted over a hold of a known
// length with a 1.5 s lease (renewal every 500 ms, waiters' poll every
// max(200 ms, lease/2) = 750 ms).
func BaselineRequests(ctx context.Context, env *Env) ([]OpCount, error) {
	const side = "baseline"
	const lease = 1500 * time.Millisecond
	const renewEvery = 500 * time.Millisecond
	const poll = lease / 2
	key := keyName("requests-baseline")
	holder := env.NewActor()
	l, err := newSeedLock(holder, false, key, 0, seedlock.WithLease(lease))
	if err != nil {
		return nil, err
	}
	s := holder.Counter.Snapshot()
	if ok, err := l.Acquire(ctx); err != nil || !ok {
		return nil, fmt.Errorf("baseline acquire: %v, %v", ok, err)
	}
	acq := holder.Counter.Since(s)

	waiter := env.NewActor()
	wl, err := newSeedLock(waiter, false, key, 1, seedlock.WithLease(lease))
	if err != nil {
		return nil, err
	}
	ws := waiter.Counter.Snapshot()
	type waitRes struct {
		out  seedlock.Outcome
		took time.Duration
	}
	done := make(chan waitRes, 1)
	go func() {
		start := time.Now()
		out, _ := wl.TryAcquireElseWaitForRelease(ctx)
		done <- waitRes{out, time.Since(start)}
	}()

	s = holder.Counter.Snapshot()
	const hold = 2*renewEvery + renewEvery/2
	time.Sleep(hold)
	renew := holder.Counter.Since(s)
	renewals := int(hold / renewEvery)
	time.Sleep(renewEvery / 2)

	// Stop the keeper's timer racing the measurement: Release stops it
	// before its one UpdateItem.
	s = holder.Counter.Snapshot()
	if err := l.Release(ctx); err != nil {
		return nil, fmt.Errorf("baseline release: %w", err)
	}
	rel := holder.Counter.Since(s)
	w := <-done
	wait := waiter.Counter.Since(ws)
	if w.out != seedlock.Released {
		return nil, fmt.Errorf("baseline waiter: %v, want RELEASED", w.out)
	}
	polls := int(w.took / poll)
	reads := wait.ByOp["GetItem"] - 1 // the acquire attempt's read
	return []OpCount{
		count(side, OpAcquire, acq, float64(acq.Total), "GetItem, 0-200 ms sleep, conditional PutItem, GetItem"),
		count(side, OpRelease, rel, float64(rel.Total), "one UpdateItem conditioned on revision and owner"),
		count(side, OpAcquireRelease, addDelta(acq, rel), float64(acq.Total+rel.Total), ""),
		count(side, OpRenew, renew, float64(renew.Total)/float64(renewals),
			fmt.Sprintf("%d UpdateItem in %v at one renewal per %v", renew.Total, hold, renewEvery)),
		count(side, OpPoll, Delta{ByOp: map[string]int{"GetItem": reads}, Total: reads}, float64(reads)/float64(max(polls, 1)),
			fmt.Sprintf("%d GetItem (eventually consistent) in %d polls of %v", reads, polls, poll)),
		count(side, OpWaitOverhead, Delta{ByOp: map[string]int{"GetItem": 1}, Total: 1}, 1,
			"the first acquire's read, which saw the lock held"),
	}, nil
}
