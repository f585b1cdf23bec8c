package bench

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/herdlock/herdlock/internal/capacity"
	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/lockcore/storeapi"
	"github.com/herdlock/herdlock/middleware/lockmw"
)

// Hot-key herd settings: DynamoDB's per-item limits, arrivals spread over
// one second, the holder working HerdWork, a Lambda timeout per invocation.
const (
	HotArrival  = time.Second
	HotDeadline = 15 * time.Second
	HotMargin   = time.Second // kept from the deadline for release and flush, as lockmw does
)

// HotMode is one way of running the herd: its name, the lock options, and
// whether execution environments are reused.
type HotMode struct {
	Name string
	Opts []lockcore.Option
	// Reuse makes the herd run as Lambda runs it: an invocation takes a
	// free execution environment (its SDK client and store, with the
	// store's memory of hot keys) when there is one, and starts a new one
	// otherwise; it frees it when it returns. Without Reuse every
	// invocation starts a new one.
	Reuse bool
	// Blind hides the key's hold history from the herd's clients (see
	// [Blind]): waiters never predict and keep lockcore's fixed pace.
	Blind bool
	// NewEnvs, when not 0, is how many new execution environments the
	// herd may start per [LambdaScalingPeriod], as Lambda scales a
	// function ([LambdaNewEnvs]): an invocation that finds no free
	// environment once they are started waits, queued, for one to free
	// up or for the next period, and its Lambda timeout starts when it
	// runs. Implies Reuse.
	NewEnvs int
	// WarmFleet runs the herd on a warm fleet: before it, N execution
	// environments each serve one invocation on a key of their own (an
	// uncontended TryAcquireElseWaitForRelease and Release), as a
	// function's environments serve other keys before a burst on one, and
	// the herd reuses them, the one freed longest ago first: each of the
	// herd's invocations runs in an environment whose previous call was on
	// another key, as in a fleet that serves other traffic besides the
	// burst. Implies Reuse.
	WarmFleet bool
}

// Lambda's scaling: a function gains at most LambdaNewEnvs new execution
// environments every LambdaScalingPeriod.
const (
	LambdaNewEnvs       = 1000
	LambdaScalingPeriod = 10 * time.Second
)

// HotResult is one hot-key herd: N invocations on one key arriving evenly
// over HotArrival, each with its own lockcore.Lock and SDK client, through
// the capacity model.
type HotResult struct {
	Mode      string  `json:"mode"`
	Real      bool    `json:"real,omitempty"` // Dynoxide behind the model, in real time; else simulated
	N         int     `json:"n"`
	WarmHolds int     `json:"warmHolds"` // holds on the key before the herd (0: a cold key)
	ArrivalMs float64 `json:"arrivalMs"` // arrivals spread evenly over this
	// CallSpanMs is the time from the first invocation's call of
	// TryAcquireElseWaitForRelease to the last one's: the arrival as the
	// machine managed it (a real herd on a small machine stretches it).
	CallSpanMs float64 `json:"callSpanMs"`
	WorkMs     float64 `json:"workMs"` // the holder's work

	Outcomes  map[Outcome]int `json:"outcomes"`
	Fetches   int             `json:"upstreamFetches"`
	LeaseLost int             `json:"leaseLost"` // holders whose lease ended before they released
	// Lock-item figures from the capacity model.
	WCU       float64        `json:"wcu"`
	RCU       float64        `json:"rcu"`
	Writes    int            `json:"writes"` // write requests on the item, throttled ones included
	Reads     int            `json:"reads"`
	Throttles map[string]int `json:"throttles"` // by operation
	// WritesPerInvocation is Writes / N.
	WritesPerInvocation float64 `json:"writesPerInvocation"`
	// Requests is every request on the item, throttled ones included, and
	// Throttled the throttled ones.
	Requests  int `json:"requests"`
	Throttled int `json:"throttled"`
	// Environments is how many execution environments the herd started.
	Environments int `json:"environments"`
	// Announcement items of the key (every shard): reads and writes that
	// reached them, throttled ones included, and the throttled ones;
	// Announced is how many invocations returned RELEASED from an
	// announcement.
	AnnReads     int `json:"announcementReads"`
	AnnWrites    int `json:"announcementWrites"`
	AnnThrottled int `json:"announcementThrottled"`
	Announced    int `json:"announced"`
	// MeanPolls is the mean of WaitResult.Polls over RELEASED invocations.
	MeanPolls float64 `json:"meanPolls"`
	// Latency is, per Released invocation, the time from the later of
	// the holder's release call and the invocation's start to its return.
	Latency Summary  `json:"releaseToReturn"`
	WallMs  float64  `json:"wallMs"`
	Errors  []string `json:"errors,omitempty"` // distinct error texts, at most 5
}

// HotTargets are the targets of a hot-key herd.
type HotTargets struct {
	MaxWritesPerInvocation float64
	MaxP99                 time.Duration
}

// DefaultHotTargets returns the targets at poll interval poll: at most 1.05
// writes per invocation, and a release-to-return p99 of 2 polls + 100 ms.
func DefaultHotTargets(poll time.Duration) HotTargets {
	return HotTargets{MaxWritesPerInvocation: 1.05, MaxP99: 2*poll + 100*time.Millisecond}
}

// Verdicts returns the verdict of each target, in the order of the table.
func (r HotResult) Verdicts(t HotTargets) []HotVerdict {
	return []HotVerdict{
		{"0 FAILED", r.Outcomes[Failed] == 0},
		{"1 fetch", r.Fetches == 1},
		{"0 lease lost", r.LeaseLost == 0},
		{fmt.Sprintf("<= %.2f writes/inv", t.MaxWritesPerInvocation), r.WritesPerInvocation <= t.MaxWritesPerInvocation},
		{fmt.Sprintf("p99 <= %v", t.MaxP99), r.Latency.N > 0 && r.Latency.P99 <= ms(t.MaxP99)},
	}
}

// HotVerdict is one target and whether it was met.
type HotVerdict struct {
	Target string
	Met    bool
}

// HotScenario is one herd's shape: N invocations arriving evenly over
// Arrival, the holder working Work, on a key that saw Warm holds before.
type HotScenario struct {
	N       int
	Arrival time.Duration
	Work    time.Duration
	// Warm is how many holds of Work ± 10 %, one after the other, the
	// key has before the herd, which then comes [WarmPause] after the
	// last: a key that is hot now and then, whose item carries the
	// history of its holds (predictive waiting). 0 is a cold key.
	Warm int
}

// Warm keys: how many holds come before a warm key's herd, and the pause
// after them, longer than lockmw's fresh-success window so that the herd's
// first arrival acquires the lock and fetches.
const (
	WarmHolds = 5
	WarmPause = lockmw.DefaultFreshSuccess + time.Second
)

// warmUp gives key n holds of hold ± 10 % through one new execution
// environment, 20 ms apart, then sleeps WarmPause.
func warmUp(ctx context.Context, pool *envPool, key string, n int, hold time.Duration) error {
	store, err := pool.newStore()
	if err != nil {
		return err
	}
	for i := range n {
		l, err := lockcore.New(store, lockcore.Params{LockID: key, LockGroup: "bench", HolderName: fmt.Sprintf("warm-%d", i), AccountID: 1, AppID: 1},
			lockcore.WithLogger(discard))
		if err != nil {
			return err
		}
		if ok, err := l.Acquire(ctx); !ok || err != nil {
			return fmt.Errorf("bench: warm-up acquire %d: %v, %v", i, ok, err)
		}
		time.Sleep(hold*9/10 + rand.N(hold/5+1))
		if err := l.Release(ctx, lockcore.Success, key); err != nil {
			return fmt.Errorf("bench: warm-up release %d: %w", i, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(WarmPause)
	return nil
}

// RunHot runs one herd of n invocations in mode on a fresh key, arriving
// over HotArrival, the holder working HerdWork. Call it in the synctest
// bubble of env.
func RunHot(ctx context.Context, env *HotEnv, mode HotMode, n int) HotResult {
	return RunHotScenario(ctx, env, mode, HotScenario{N: n, Arrival: HotArrival, Work: HerdWork})
}

// RunHotScenario runs one herd of shape sc in mode on a fresh key. Call it
// in the synctest bubble of env.
func RunHotScenario(ctx context.Context, env *HotEnv, mode HotMode, sc HotScenario) HotResult {
	n := sc.N
	temp := "cold"
	if sc.Warm > 0 {
		temp = "warm"
	}
	key := keyName(fmt.Sprintf("hot-%s-%s-%d", mode.Name, temp, n))
	lk := lockcore.Key{Group: "bench", ID: key}
	itemKey := capacity.ItemKey(LockTable, storeapi.AttrLockKey, storeapi.PartitionKey(lk))
	pool := &envPool{env: env, reuse: mode.Reuse || mode.NewEnvs > 0 || mode.WarmFleet, blind: mode.Blind, newEnvs: mode.NewEnvs, oldestFirst: mode.WarmFleet}
	var warmErr error
	if sc.Warm > 0 {
		warmErr = warmUp(ctx, pool, key, sc.Warm, sc.Work)
	}
	if mode.WarmFleet && warmErr == nil {
		warmErr = warmFleet(ctx, pool, key, n, mode.Opts)
	}
	before := env.Proxy.Item(itemKey)
	annBefore := announcementStats(env.Proxy, lk)
	var (
		fetches   atomic.Int64
		leaseLost atomic.Int64
		relMu     sync.Mutex
		relAt     []time.Time
	)
	type ret struct {
		outcome   Outcome
		start     time.Time
		called    time.Time // when it called TryAcquireElseWaitForRelease (zero: it did not)
		end       time.Time
		err       error
		announced bool
		polls     int
	}
	rets := make([]ret, n)
	pool.started, pool.epoch = 0, time.Now()
	begin := time.Now()
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			at := begin.Add(time.Duration(i) * sc.Arrival / time.Duration(n))
			time.Sleep(time.Until(at))
			arrived := time.Now()
			store, err := pool.get(ctx)
			if err != nil {
				rets[i] = ret{outcome: Failed, start: arrived, end: time.Now(), err: err}
				return
			}
			defer pool.put(store)
			start := time.Now() // the Lambda timeout starts when the invocation runs
			ictx, cancel := context.WithDeadline(ctx, start.Add(HotDeadline))
			defer cancel()
			l, err := lockcore.New(store, lockcore.Params{
				LockID: key, LockGroup: "bench", HolderName: fmt.Sprintf("invocation-%d", i), AccountID: 1, AppID: 1,
				RemainingTime: func() time.Duration { return time.Until(start.Add(HotDeadline - HotMargin)) },
			}, append([]lockcore.Option{lockcore.WithLogger(discard)}, mode.Opts...)...)
			if err != nil {
				rets[i] = ret{outcome: Failed, start: start, end: time.Now(), err: err}
				return
			}
			called := time.Now()
			res, err := l.TryAcquireElseWaitForRelease(ictx)
			r := ret{start: arrived, called: called, err: err, polls: res.Polls}
			switch res.Outcome {
			case lockcore.Released:
				r.outcome = Released
				r.announced = res.Announced
			case lockcore.Acquired:
				r.outcome = Acquired
				if res.TookOver {
					r.outcome = TookOver
				}
				fetches.Add(1)
				time.Sleep(sc.Work)
				hctx := l.Context()
				if hctx.Err() != nil && !errors.Is(context.Cause(hctx), lockcore.ErrReleased) {
					leaseLost.Add(1)
				}
				relMu.Lock()
				relAt = append(relAt, time.Now())
				relMu.Unlock()
				if rerr := l.Release(ictx, lockcore.Success, key); rerr != nil {
					if errors.Is(rerr, lockcore.ErrLeaseLost) && hctx.Err() == nil {
						leaseLost.Add(1)
					}
					r.err = rerr
				}
			default:
				r.outcome = Failed
			}
			r.end = time.Now()
			rets[i] = r
		}()
	}
	wg.Wait()

	s := statsSince(env.Proxy.Item(itemKey), before)
	ann := statsSince(announcementStats(env.Proxy, lk), annBefore)
	r := HotResult{Mode: mode.Name, N: n, WarmHolds: sc.Warm, Real: env.Real, ArrivalMs: ms(sc.Arrival), WorkMs: ms(sc.Work), Outcomes: map[Outcome]int{}, Fetches: int(fetches.Load()),
		LeaseLost: int(leaseLost.Load()), WCU: s.WriteUnits, RCU: s.ReadUnits, Writes: s.Writes(),
		Reads: s.Ops["GetItem"].Requests, Throttles: map[string]int{}, WallMs: ms(time.Since(begin))}
	for op, o := range s.Ops {
		r.Requests += o.Requests
		r.Throttled += o.Throttled
		if o.Throttled > 0 {
			r.Throttles[op] = o.Throttled
		}
	}
	r.Environments = pool.started
	r.WritesPerInvocation = float64(r.Writes) / float64(n)
	r.AnnReads, r.AnnWrites = ann.Ops["GetItem"].Requests, ann.Writes()
	for _, o := range ann.Ops {
		r.AnnThrottled += o.Throttled
	}
	seen := map[string]bool{}
	if warmErr != nil {
		seen[warmErr.Error()] = true
		r.Errors = append(r.Errors, warmErr.Error())
	}
	var lat []float64
	polls := 0
	var first, last time.Time
	for _, rt := range rets {
		if c := rt.called; !c.IsZero() {
			if first.IsZero() || c.Before(first) {
				first = c
			}
			if c.After(last) {
				last = c
			}
		}
		r.Outcomes[rt.outcome]++
		if rt.announced {
			r.Announced++
		}
		if rt.err != nil && !seen[rt.err.Error()] && len(seen) < 5 {
			seen[rt.err.Error()] = true
			r.Errors = append(r.Errors, rt.err.Error())
		}
		if rt.outcome != Released {
			continue
		}
		polls += rt.polls
		if rel, ok := lastBefore(relAt, rt.end); ok {
			from := rel
			if rt.start.After(from) {
				from = rt.start
			}
			lat = append(lat, ms(rt.end.Sub(from)))
		}
	}
	if rel := r.Outcomes[Released]; rel > 0 {
		r.MeanPolls = float64(polls) / float64(rel)
	}
	sort.Strings(r.Errors)
	r.Latency = Summarize(lat)
	r.CallSpanMs = ms(last.Sub(first))
	return r
}

// announcementStats returns the counts of every announcement item of k
// (all [storeapi.MaxAnnounceShards] shards), summed.
func announcementStats(p *capacity.Proxy, k lockcore.Key) capacity.ItemStats {
	var sum capacity.ItemStats
	for shard := range storeapi.MaxAnnounceShards {
		s := p.Item(capacity.ItemKey(LockTable, storeapi.AttrLockKey, storeapi.AnnouncementKey(k, shard)))
		sum = addStats(sum, s, 1)
	}
	return sum
}

// statsSince returns the counts of now less those of before.
func statsSince(now, before capacity.ItemStats) capacity.ItemStats {
	return addStats(now, before, -1)
}

func addStats(a, b capacity.ItemStats, sign int) capacity.ItemStats {
	out := capacity.ItemStats{Ops: map[string]capacity.OpStats{}, WriteUnits: a.WriteUnits + float64(sign)*b.WriteUnits,
		ReadUnits: a.ReadUnits + float64(sign)*b.ReadUnits}
	for op, o := range a.Ops {
		out.Ops[op] = o
	}
	for op, o := range b.Ops {
		x := out.Ops[op]
		x.Requests += sign * o.Requests
		x.Throttled += sign * o.Throttled
		x.ConditionFailed += sign * o.ConditionFailed
		x.Units += float64(sign) * o.Units
		out.Ops[op] = x
	}
	return out
}

// warmFleet gives pool n free execution environments that have each served
// one invocation on a key of its own (not key), with the lock options
// opts, at most fleetWarmers at a time (so that a real server on a small
// machine serves them in time), then sleeps HotSettle.
func warmFleet(ctx context.Context, pool *envPool, key string, n int, opts []lockcore.Option) error {
	stores := make([]*lockcore.DynamoStore, n)
	errs := make([]error, n)
	slots := make(chan struct{}, fleetWarmers)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		slots <- struct{}{}
		go func() {
			defer func() { <-slots }()
			defer wg.Done()
			stores[i], errs[i] = pool.newStore()
			if errs[i] != nil {
				return
			}
			other := fmt.Sprintf("%s-other-%d", key, i)
			l, err := lockcore.New(stores[i], lockcore.Params{LockID: other, LockGroup: "bench", HolderName: fmt.Sprintf("fleet-%d", i), AccountID: 1, AppID: 1},
				append([]lockcore.Option{lockcore.WithLogger(discard)}, opts...)...)
			if err != nil {
				errs[i] = err
				return
			}
			ictx, cancel := context.WithTimeout(ctx, HotDeadline)
			defer cancel()
			if res, err := l.TryAcquireElseWaitForRelease(ictx); err != nil || res.Outcome != lockcore.Acquired {
				errs[i] = fmt.Errorf("bench: warm fleet's call %d on its own key: %v, %v", i, res.Outcome, err)
				return
			}
			errs[i] = l.Release(ictx, lockcore.Success, other)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	pool.mu.Lock()
	pool.free = append(pool.free, stores...)
	pool.mu.Unlock()
	time.Sleep(HotSettle)
	return nil
}

// fleetWarmers is how many of a warm fleet's environments serve their
// call on another key at once.
const fleetWarmers = 32

// envPool hands out execution environments: a DynamoStore on its own SDK
// client, reused when the mode says so, started no faster than newEnvs per
// LambdaScalingPeriod when that is not 0.
type envPool struct {
	env     *HotEnv
	reuse   bool
	blind   bool // hide the hold history (see Blind)
	newEnvs int  // 0: no limit
	// oldestFirst hands out the environment freed longest ago, not the
	// latest: on a warm fleet, each invocation of the herd then runs in an
	// environment whose previous call was on another key.
	oldestFirst bool
	mu          sync.Mutex
	free        []*lockcore.DynamoStore
	freed       chan struct{} // closed when an environment is put back; nil until one waits
	epoch       time.Time     // the scaling periods count from here
	period      int           // the scaling period of inPeriod
	started     int
	// inPeriod is how many environments were started in the scaling
	// period period.
	inPeriod int
}

// get returns a free environment, or a new one; when the scaling limit
// allows no new one, it waits for one to be freed or for the next scaling
// period.
func (p *envPool) get(ctx context.Context) (*lockcore.DynamoStore, error) {
	for {
		p.mu.Lock()
		if n := len(p.free); p.reuse && n > 0 {
			s := p.free[n-1]
			if p.oldestFirst {
				s = p.free[0]
				p.free = p.free[1:]
			} else {
				p.free = p.free[:n-1]
			}
			p.mu.Unlock()
			return s, nil
		}
		since := time.Since(p.epoch)
		if k := int(since / LambdaScalingPeriod); k != p.period {
			p.period, p.inPeriod = k, 0
		}
		if p.newEnvs == 0 || p.inPeriod < p.newEnvs {
			p.started++
			p.inPeriod++
			p.mu.Unlock()
			return p.newStore()
		}
		if p.freed == nil {
			p.freed = make(chan struct{})
		}
		freed := p.freed
		next := time.Duration(p.period+1)*LambdaScalingPeriod - since
		p.mu.Unlock()
		t := time.NewTimer(next)
		select {
		case <-freed:
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		}
		t.Stop()
	}
}

// newStore returns the store of a new execution environment.
func (p *envPool) newStore() (*lockcore.DynamoStore, error) {
	var api StoreAPI = p.env.NewClient()
	if p.blind {
		api = Blind(api)
	}
	return lockcore.NewDynamoStore(api, LockTable)
}

func (p *envPool) put(s *lockcore.DynamoStore) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.reuse {
		p.free = append(p.free, s)
		if p.freed != nil {
			close(p.freed)
			p.freed = nil
		}
	}
}

// RequestsPerInvocation is Requests / N.
func (r HotResult) RequestsPerInvocation() float64 { return float64(r.Requests) / float64(r.N) }

// ThrottledShare is Throttled / Requests.
func (r HotResult) ThrottledShare() float64 {
	if r.Requests == 0 {
		return 0
	}
	return float64(r.Throttled) / float64(r.Requests)
}
