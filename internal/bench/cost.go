package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/herdlock/herdlock/internal/capacity"
	"github.com/herdlock/herdlock/internal/seedlock"
	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/middleware/lockmw"
)

// The cost figure: a burst of N invocations on one key, arriving evenly
// over HotArrival, the first caller's upstream call taking HerdWork, each
// caller in an execution environment of its own on the simulated DynamoDB
// of [HotEnv] (the capacity model at DynamoDB's per-item limits, in
// virtual time). Every caller is a client that sends its request again,
// with the AWS SDKs' standard backoff (see duplicateBurst.caller), when
// its invocation failed, up to ClientMaxAttempts: the Powertools-style
// layer relies on that for every concurrent duplicate, and the other sides
// get the same client. The counts are the capacity model's (every item
// the side uses) and the invocations' own clocks.
const (
	// SideCostDefault is lockcore with lockmw's fresh-success window.
	SideCostDefault = "herdlock (defaults)"
	// SideCostReadFirst adds lockcore.Herd.ReadFirst.
	SideCostReadFirst = "herdlock, read-first"
	// SideCostSeed is the seed's protocol (package seedlock, as figure 3's
	// baseline runs it).
	SideCostSeed = "seed protocol"
	// SideCostPowertools is the Powertools-style layer (powertoolsLayer).
	SideCostPowertools = SidePowertools
)

// CostSizes are the burst sizes of the cost figure.
var CostSizes = []int{10, 100, 1000, 10000}

// CostSides are the sides of the cost figure, in the table's order.
var CostSides = []string{SideCostDefault, SideCostReadFirst, SideCostSeed, SideCostPowertools}

// Published prices of the cost figure: US East (N. Virginia), as of
// 2026-12-04 (see BENCHMARKS.md, "The cost of a burst", for the sources).
// On-demand DynamoDB since the price cut of 2024-11-01; Lambda on arm64,
// the example's architecture, at its first duration tier; the example's
// memory size.
const (
	PriceWriteRequestUnit = 0.625 / 1e6 // dollars per on-demand write request unit
	PriceReadRequestUnit  = 0.125 / 1e6 // dollars per on-demand read request unit
	PriceWCUHour          = 0.00065     // dollars per provisioned WCU-hour
	PriceRCUHour          = 0.00013     // dollars per provisioned RCU-hour
	PriceLambdaGBSecond   = 0.0000133334
	PriceLambdaRequest    = 0.20 / 1e6
	CostMemoryGB          = 0.25 // template.yaml's MemorySize, 256 MB
)

// CostResult is one row of the cost figure: a burst of N on one side.
type CostResult struct {
	Side string `json:"side"`
	N    int    `json:"n"`
	// Invocations is every Lambda invocation of the burst, the clients'
	// retries included.
	Invocations int `json:"invocations"`
	// Answered is the callers that got the answer; Errors those whose
	// last attempt still failed.
	Answered int `json:"answered"`
	Errors   int `json:"errors"`
	// Fetches is how often the upstream call ran.
	Fetches int `json:"upstreamFetches"`
	// Requests and Throttled are the DynamoDB requests of the burst on
	// every item (the lock item, announcement shards, the idempotency
	// record), throttled ones included.
	Requests  int `json:"requests"`
	Throttled int `json:"throttled"`
	// ReadUnits and WriteUnits are the capacity the requests consumed, as
	// DynamoDB charges it (a throttled request consumes none): on-demand,
	// the read and write request units billed.
	ReadUnits  float64 `json:"readUnits"`
	WriteUnits float64 `json:"writeUnits"`
	// PeakReadUnits and PeakWriteUnits are the most consumed within one
	// second of the burst: the provisioned capacity it needs (the table's,
	// besides the per-partition limits of the model).
	PeakReadUnits  float64 `json:"peakReadUnits"`
	PeakWriteUnits float64 `json:"peakWriteUnits"`
	// LockSeconds is the Lambda time of every invocation besides the
	// upstream call, summed: the time spent acquiring, waiting, raising
	// and releasing.
	LockSeconds float64 `json:"lockSeconds"`
	WallMs      float64 `json:"wallMs"`
	// LastErrors is the distinct errors of the callers' last attempts, at
	// most 3.
	LastErrors []string `json:"lastErrors,omitempty"`
}

// GBSeconds is the Lambda GB-seconds of LockSeconds at CostMemoryGB.
func (r CostResult) GBSeconds() float64 { return r.LockSeconds * CostMemoryGB }

// OnDemandDollars is the DynamoDB bill of the burst on an on-demand table.
func (r CostResult) OnDemandDollars() float64 {
	return r.ReadUnits*PriceReadRequestUnit + r.WriteUnits*PriceWriteRequestUnit
}

// ProvisionedDollars is the hourly price of the provisioned capacity the
// burst needs (its peak second) to go unthrottled by the table's
// capacity: a provisioned table pays it every hour it keeps that capacity,
// bursts or not.
func (r CostResult) ProvisionedDollars() float64 {
	return r.PeakReadUnits*PriceRCUHour + r.PeakWriteUnits*PriceWCUHour
}

// LambdaDollars is the Lambda bill of the burst's lock time and of its
// invocations.
func (r CostResult) LambdaDollars() float64 {
	return r.GBSeconds()*PriceLambdaGBSecond + float64(r.Invocations)*PriceLambdaRequest
}

// TotalDollars is OnDemandDollars plus LambdaDollars.
func (r CostResult) TotalDollars() float64 { return r.OnDemandDollars() + r.LambdaDollars() }

// costBurst is one burst in progress.
type costBurst struct {
	env      *HotEnv
	side     string
	key      string
	upstream atomic.Int64
	invoked  atomic.Int64
	lockNs   atomic.Int64 // invocations' time besides the upstream call
}

// work is the upstream call: HerdWork, its time not counted as the lock's.
func (b *costBurst) work(ctx context.Context) (string, error) {
	b.upstream.Add(1)
	start := time.Now()
	defer func() { b.lockNs.Add(-int64(time.Since(start))) }()
	if err := sleepCtx(ctx, HerdWork); err != nil {
		return "", err
	}
	return b.key, nil
}

// invocation runs one invocation of side in the execution environment env.
func (b *costBurst) invocation(ctx context.Context, env *costEnv, i int) error {
	b.invoked.Add(1)
	start := time.Now()
	defer func() { b.lockNs.Add(int64(time.Since(start))) }()
	ictx, cancel := context.WithDeadline(ctx, start.Add(HotDeadline))
	defer cancel()
	switch b.side {
	case SideCostPowertools:
		p := &powertoolsLayer{client: env.client, expiresAfter: time.Hour} // idempotency's default retention
		_, err := p.invoke(ictx, b.key, []byte(b.key), b.work)
		return err
	case SideCostSeed:
		l, err := seedlock.New(seedDB{Client: env.client}, LockTable, seedlock.Params{LockID: b.key, LockGroup: "bench",
			HolderName: fmt.Sprintf("invocation-%d", i), AccountID: 1, AppID: 1})
		if err != nil {
			return err
		}
		out, err := l.TryAcquireElseWaitForRelease(ictx)
		switch out {
		case seedlock.Released:
			return nil
		case seedlock.Acquired:
			_, werr := b.work(ictx)
			return errors.Join(werr, l.Release(ictx))
		}
		return fmt.Errorf("bench: seed protocol: %v", err)
	}
	opts := []lockcore.Option{lockcore.WithLogger(discard), lockcore.WithFreshSuccess(lockmw.DefaultFreshSuccess)}
	if b.side == SideCostReadFirst {
		opts = append(opts, lockcore.WithHerd(lockcore.Herd{ReadFirst: true}))
	}
	l, err := lockcore.New(env.store, lockcore.Params{LockID: b.key, LockGroup: "bench", HolderName: fmt.Sprintf("invocation-%d", i),
		AccountID: 1, AppID: 1, RemainingTime: func() time.Duration { return time.Until(start.Add(HotDeadline - HotMargin)) }}, opts...)
	if err != nil {
		return err
	}
	res, err := l.TryAcquireElseWaitForRelease(ictx)
	switch res.Outcome {
	case lockcore.Released:
		return nil
	case lockcore.Acquired:
		ref, werr := b.work(ictx)
		if werr != nil {
			return errors.Join(werr, l.Release(ictx, lockcore.Failure, ""))
		}
		return l.Release(ictx, lockcore.Success, ref)
	}
	return err
}

// costEnv is one caller's execution environment: its SDK client and, for
// herdlock, its store (with the store's memory of hot keys).
type costEnv struct {
	client *dynamodb.Client
	store  *lockcore.DynamoStore
}

// caller is one client until it has the answer or gives up: it sends its
// request again after a failed invocation with the AWS SDKs' standard
// backoff, up to ClientMaxAttempts (as duplicateBurst.caller does). It
// returns the last attempt's error, nil when it has the answer.
func (b *costBurst) caller(ctx context.Context, i int) error {
	client := b.env.NewClient()
	store, err := lockcore.NewDynamoStore(client, LockTable)
	if err != nil {
		return err
	}
	env := &costEnv{client: client, store: store}
	backoff := retry.NewExponentialJitterBackoff(ClientMaxBackoff)
	for attempt := 1; ; attempt++ {
		err := b.invocation(ctx, env, i)
		if err == nil || attempt == ClientMaxAttempts {
			return err
		}
		d, _ := backoff.BackoffDelay(attempt, nil)
		if err := sleepCtx(ctx, d); err != nil {
			return err
		}
	}
}

// RunCost runs one row of the cost figure: a burst of n on side, in a
// fresh env. Run it inside a synctest bubble.
func RunCost(ctx context.Context, side string, n int) (CostResult, error) {
	env, err := StartHotEnv(ctx, capacity.Config{})
	if err != nil {
		return CostResult{}, err
	}
	if side == SideCostPowertools {
		if err := createPowertoolsTable(ctx, env.NewClient()); err != nil {
			return CostResult{}, err
		}
	}
	b := &costBurst{env: env, side: side, key: keyName(fmt.Sprintf("cost-%d", n))}
	before := totalStats(env.Proxy)
	var peakRead, peakWrite float64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() { // the peak second: consumption in windows of one second from the burst's start
		defer close(sampled)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		last := before
		for {
			done := false
			select {
			case <-t.C:
			case <-stop:
				done = true
			}
			now := totalStats(env.Proxy)
			d := statsSince(now, last)
			peakRead, peakWrite, last = max(peakRead, d.ReadUnits), max(peakWrite, d.WriteUnits), now
			if done {
				return
			}
		}
	}()
	begin := time.Now()
	var answered, failed atomic.Int64
	var errMu sync.Mutex
	lastErrors := map[string]bool{}
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			_ = sleepCtx(ctx, time.Duration(i)*HotArrival/time.Duration(n))
			err := b.caller(ctx, i)
			if err == nil {
				answered.Add(1)
				return
			}
			failed.Add(1)
			errMu.Lock()
			if len(lastErrors) < 3 {
				lastErrors[err.Error()] = true
			}
			errMu.Unlock()
		})
	}
	wg.Wait()
	wall := time.Since(begin)
	close(stop)
	<-sampled
	st := statsSince(totalStats(env.Proxy), before)
	r := CostResult{Side: side, N: n, Invocations: int(b.invoked.Load()), Answered: int(answered.Load()), Errors: int(failed.Load()),
		Fetches: int(b.upstream.Load()), ReadUnits: st.ReadUnits, WriteUnits: st.WriteUnits, PeakReadUnits: peakRead,
		PeakWriteUnits: peakWrite, LockSeconds: time.Duration(b.lockNs.Load()).Seconds(), WallMs: ms(wall)}
	for e := range lastErrors {
		r.LastErrors = append(r.LastErrors, e)
	}
	sort.Strings(r.LastErrors)
	for _, o := range st.Ops {
		r.Requests += o.Requests
		r.Throttled += o.Throttled
	}
	return r, nil
}

// RunCostRows runs every side at each size. Run it inside a synctest
// bubble.
func RunCostRows(ctx context.Context, sizes []int) ([]CostResult, error) {
	var rs []CostResult
	for _, n := range sizes {
		for _, side := range CostSides {
			r, err := RunCost(ctx, side, n)
			if err != nil {
				return nil, fmt.Errorf("bench: cost %s %d: %w", side, n, err)
			}
			rs = append(rs, r)
		}
	}
	return rs, nil
}

// Environment of TestCostFigure, which runs the figure in a synctest
// bubble for cmd/bench: where to write the rows, and the burst sizes
// (comma-separated; CostSizes when unset).
const (
	CostFigureOutEnv   = "HERDLOCK_COST_FIGURE_OUT"
	CostFigureSizesEnv = "HERDLOCK_COST_FIGURE_SIZES"
)

// RunCostFigure runs the figure at sizes in a test process of the module
// at root (its bursts need a synctest bubble), and returns its rows.
func RunCostFigure(ctx context.Context, root, sizes string) ([]CostResult, error) {
	if _, err := ParseSizes(sizes); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "herdlock-cost-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "cost.json")
	cmd := exec.CommandContext(ctx, "go", "test", "-run", "^TestCostFigure$", "-count", "1", "-timeout", "30m", "./internal/bench")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), CostFigureOutEnv+"="+out, CostFigureSizesEnv+"="+sizes)
	if b, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("bench: cost figure: %v: %s", err, lastLines(b, 8))
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		return nil, err
	}
	var rs []CostResult
	if err := json.Unmarshal(raw, &rs); err != nil {
		return nil, fmt.Errorf("bench: cost figure: %w", err)
	}
	return rs, nil
}

// WriteCostTable prints the figure's rows as a Markdown table; the
// on-demand, Lambda and total columns are dollars per million bursts
// (micro-dollars per burst), the provisioned column dollars per hour.
func WriteCostTable(w io.Writer, rs []CostResult) error {
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
	fmt.Fprintln(tw, "| N\t| side\t| answered / errors\t| fetches\t| invocations\t| requests (throttled)\t| RRU\t| WRU\t| peak RCU/s / WCU/s\t| lock GB-s\t| on-demand $/1M\t| provisioned peak $/h\t| Lambda $/1M\t| total $/1M\t|")
	fmt.Fprintln(tw, "|---:\t|---\t|---\t|---:\t|---:\t|---:\t|---:\t|---:\t|---\t|---:\t|---:\t|---:\t|---:\t|---:\t|")
	for _, r := range rs {
		fmt.Fprintf(tw, "| %d\t| %s\t| %d / %d\t| %d\t| %d\t| %d (%d)\t| %.1f\t| %.0f\t| %.0f / %.0f\t| %.3f\t| %.0f\t| %.4f\t| %.0f\t| %.0f\t|\n",
			r.N, r.Side, r.Answered, r.Errors, r.Fetches, r.Invocations, r.Requests, r.Throttled, r.ReadUnits, r.WriteUnits,
			r.PeakReadUnits, r.PeakWriteUnits, r.GBSeconds(), r.OnDemandDollars()*1e6, r.ProvisionedDollars(),
			r.LambdaDollars()*1e6, r.TotalDollars()*1e6)
	}
	return tw.Flush()
}
