package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/herdlock/herdlock/internal/seedlock"
	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/lockcore/storeapi"
)

// WorkerEnv is the environment variable that turns a process into a
// harness worker: it holds the worker's JSON spec. A binary used as
// Config.WorkerCommand checks it first thing and calls WorkerMain.
const WorkerEnv = "HERDLOCK_CHAOS_WORKER"

// IsWorker reports whether this process was started as a worker.
func IsWorker() bool { return os.Getenv(WorkerEnv) != "" }

// WorkerMain runs the worker described by WorkerEnv and exits the process.
func WorkerMain() {
	var spec workerSpec
	if err := json.Unmarshal([]byte(os.Getenv(WorkerEnv)), &spec); err != nil {
		fmt.Fprintln(os.Stderr, "chaos worker: bad spec:", err)
		os.Exit(2)
	}
	if err := runWorker(spec); err != nil {
		fmt.Fprintln(os.Stderr, "chaos worker:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// workerSpec is everything a worker process needs, passed in WorkerEnv.
type workerSpec struct {
	Slot     int
	Inc      int
	Seed     int64
	Variant  Variant
	Proxy    string
	Resource string
	Table    string
	Phases   []Phase
	Origin   int64
	End      int64
	Skews    map[int]*Skew
	Keys     int
	Epoch    time.Duration
	Herd     []herdRound

	Lease, Poll, MaxWait, MaxHold, ClockAllowance time.Duration
	MaxAttempts                                   int
	Drift                                         float64
	AttemptTimeout                                time.Duration
	ClientTimeout                                 time.Duration // the SDK's per-attempt timeout
	Attempts                                      int
	MaxBackoff                                    time.Duration

	WorkMedian               time.Duration
	LongWorkP                float64
	LongWorkMin, LongWorkMax time.Duration
	FreezeAfterReturnP       float64
	NearMaxHoldP             float64
	FreshSuccess             time.Duration // storm cycles' lockcore.WithFreshSuccess
	IdemP, IdemMismatchP     float64       // storm cycles through the idempotency layer; of those, mismatched deliveries
}

// herdRound is one herd round: every worker calls the lock on Key at true
// time At. Kill rounds have their holder killed at its upstream fetch; in
// Fail rounds the upstream refuses the first fetches with a Retry-After.
type herdRound struct {
	Key   string
	At    int64
	Phase int
	Kill  bool
	Fail  bool
}

// worker is one worker process's state.
type worker struct {
	spec   workerSpec
	rng    *rand.Rand
	clock  *skewClock
	client *dynamodb.Client
	store  storeapi.Store
	http   *http.Client
	log    *slog.Logger

	outMu sync.Mutex // guards writes to stdout

	// hot is the worker's memory of hot keys, shared by its Locks as a
	// DynamoStore's own is in Lambda (the intent store wrapping it has
	// none of its own).
	hot *lockcore.HotKeys
	// metrics sums what the worker's Locks count; wait and release events
	// carry it (see Event.Metrics).
	metrics counterTally
	// nearMaxDrawn is whether the worker has drawn a storm hold into the
	// hard maximum: its first storm hold is one (see stormWork).
	nearMaxDrawn atomic.Bool
	// idemRefusalSeen is whether one of the worker's idempotent
	// deliveries has been refused for its payload (see idemCycle).
	idemRefusalSeen atomic.Bool
	// idemOp is the worker's idempotent operation (worker_idem.go), nil
	// when the storm sends none.
	idemOp func(context.Context, idemEvent) (idemAnswer, error)
}

// counterTally sums the counters a Lock records (lockcore.Metrics); the
// other units (times) are not summed.
type counterTally struct {
	mu   sync.Mutex
	sums map[string]float64
}

// AddMetric implements lockcore.Metrics.
func (c *counterTally) AddMetric(name, unit string, v float64) {
	if unit != "Count" || v == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sums == nil {
		c.sums = make(map[string]float64)
	}
	c.sums[name] += v
}

// take returns the sums since the last take, and starts again.
func (c *counterTally) take() map[string]float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.sums
	c.sums = nil
	return m
}

func runWorker(spec workerSpec) error {
	w := &worker{
		spec:  spec,
		rng:   rand.New(rand.NewPCG(uint64(spec.Seed), uint64(spec.Slot)<<20|uint64(spec.Inc))),
		clock: &skewClock{origin: spec.Origin, phases: spec.Phases, skews: spec.Skews},
		http:  &http.Client{Timeout: 5 * time.Second},
		log:   slog.New(slog.NewTextHandler(io.Discard, nil)),
		hot:   lockcore.NewHotKeys(1024), // the size of a store's own
	}
	w.client = lockClient(spec.Proxy, spec.ClientTimeout, spec.Attempts, spec.MaxBackoff)
	ds, err := lockcore.NewDynamoStore(w.client, spec.Table)
	if err != nil {
		return err
	}
	w.store = intentStore{inner: ds}
	switch spec.Variant {
	case VariantNoRevision:
		w.store = intentStore{inner: noRevisionStore{DynamoStore: ds, api: w.client, table: spec.Table}}
	case VariantNoGuard:
		w.store = noGuardStore{intentStore{inner: ds}}
	case VariantStubborn:
		w.store = stubbornStore{Store: intentStore{inner: ds}, api: w.client, table: spec.Table}
	}
	if spec.IdemP > 0 && spec.Variant != VariantSeed {
		if w.idemOp, err = w.newIdemOp(); err != nil {
			return err
		}
	}
	w.emit(Event{T: Mono(), Kind: EvStart})
	go w.watchStalls()
	for guard := 0; Mono() < spec.End && guard < 1_000_000; guard++ {
		idx := phaseIndex(spec.Phases, Mono())
		if spec.Phases[idx].Kind == Herd {
			w.herdPhase(idx)
			continue
		}
		if next := idx + 1; next < len(spec.Phases) && spec.Phases[next].Kind == Herd &&
			Mono() > spec.Phases[idx].End-int64(spec.MaxWait) {
			// Be idle for the herd's first round rather than late to it.
			time.Sleep(time.Duration(spec.Phases[idx].End - Mono()))
			continue
		}
		kind := cyclePlain
		if spec.Phases[idx].Kind == Storm {
			kind = cycleStorm
			if w.idemOp != nil && w.rng.Float64() < spec.IdemP {
				w.idemCycle(idx)
				continue
			}
		}
		key := w.pickKey(idx)
		told := w.cycle(key, kind, 0)
		if told > 0 {
			w.comeBack(key, kind, told, idx)
		}
	}
	return nil
}

// comeBack is the invocation that a refusal naming a time (told, Unix
// milliseconds) sent away: it sleeps until its clock reads told and calls
// the lock on key again, as a client honouring a Retry-After does. Only
// within the phase, with time left for the wait.
func (w *worker) comeBack(key string, kind cycleKind, told int64, phase int) {
	d := time.Until(time.UnixMilli(told)) - w.clock.offset(Mono())
	if d < 0 || d > 15*time.Second || Mono()+int64(d)+int64(w.spec.MaxWait) > w.spec.Phases[phase].End {
		return
	}
	time.Sleep(d) // the client's own back-off: the time it was told
	for !w.clock.Now().After(time.UnixMilli(told)) {
		time.Sleep(time.Millisecond) // the skewed clock's reading, not the host's
	}
	w.cycle(key, kind, told)
}

func (w *worker) emit(e Event) {
	e.Worker, e.Inc = w.spec.Slot, w.spec.Inc
	if e.Kind == EvWait || e.Kind == EvRelease {
		e.Metrics = w.metrics.take()
	}
	b, _ := json.Marshal(e)
	b = append(b, '\n')
	w.outMu.Lock()
	os.Stdout.Write(b) // one write per line: lines stay whole in the pipe
	w.outMu.Unlock()
}

// pickKey draws one of the contended keys with a Zipf law (weight 1/(i+1))
// and names it after the phase and the key epoch.
func (w *worker) pickKey(phase int) string {
	var total float64
	for i := range w.spec.Keys {
		total += 1 / float64(i+1)
	}
	u := w.rng.Float64() * total
	k := 0
	for i := range w.spec.Keys {
		u -= 1 / float64(i+1)
		if u <= 0 {
			k = i
			break
		}
	}
	epoch := (Mono() - w.spec.Phases[phase].Start) / int64(w.spec.Epoch)
	return fmt.Sprintf("k%d.p%d.e%d", k, phase, epoch)
}

// herdPhase plays the rounds of herd phase idx that have not started yet.
func (w *worker) herdPhase(idx int) {
	for _, r := range w.spec.Herd {
		if r.Phase != idx || r.At < Mono()-int64(50*time.Millisecond) {
			continue
		}
		if d := time.Duration(r.At - Mono()); d > 0 {
			time.Sleep(d) // workload scheduling: start the round together with the others
		}
		w.cycle(r.Key, cycleHerd, 0)
	}
	if d := time.Duration(w.spec.Phases[idx].End - Mono()); d > 0 {
		time.Sleep(d)
	}
}

// cycleKind says what a cycle's holder does.
type cycleKind int

const (
	cyclePlain cycleKind = iota // write, work, write, release
	cycleHerd                   // fetch upstream, write, release
	cycleStorm                  // fetch upstream (which may fail), write, work, write, release
)

// outcome is how a holder releases: with success, or as a failure with a
// reason and, from an upstream's Retry-After, a not-before.
type outcome struct {
	success   bool
	reason    string
	notBefore time.Time
}

// holder is a held lock of either implementation.
type holder interface {
	Valid() bool
	Fence() int64
	Revision() string
	Context() context.Context
	release(ctx context.Context, o outcome) error
}

type coreHolder struct {
	*lockcore.Lock
	rev      string
	store    storeapi.Store
	stubborn bool // VariantStubborn: publish a failure again after every release
}

func (h coreHolder) release(ctx context.Context, o outcome) error {
	rev := h.rev
	var err error
	if o.success {
		err = h.Lock.Release(ctx, lockcore.Success, "resource")
	} else {
		opts := []lockcore.ReleaseOption{lockcore.WithFailureReason(o.reason)}
		if !o.notBefore.IsZero() {
			opts = append(opts, lockcore.WithNotBefore(o.notBefore))
		}
		err = h.Lock.Release(ctx, lockcore.Failure, "", opts...)
	}
	if st, ok := h.store.(stubbornStore); ok && h.stubborn && err != nil && rev != "" {
		// The broken holder: told that its lock was released under it,
		// it publishes its failure over that release.
		_ = st.publishOver(ctx, h.Key(), rev, h.Lease())
	}
	return err
}

type seedHolder struct{ *seedlock.Lock }

func (h seedHolder) Valid() bool { return h.HasLock() && h.Context().Err() == nil }
func (h seedHolder) release(ctx context.Context, _ outcome) error {
	return h.Lock.Release(ctx)
}

// storeKey is the partition key of lock id in the harness's lock group:
// what the store history, the events and the resource all use as the key.
func storeKey(id string) string {
	return storeapi.PartitionKey(lockcore.Key{Group: lockGroup, ID: id})
}

// lockGroup is the lock group of every harness lock.
const lockGroup = "chaos"

// cycle is one invocation: try to acquire key or wait for its release; as
// holder, write to the resource (fetching upstream first in herd rounds),
// work, write again and release; as a released waiter, read the data. back
// is the not-before the invocation came back at (0: a first call). It
// returns the not-before a refusal named (Unix milliseconds), or 0.
func (w *worker) cycle(key string, kind cycleKind, back int64) int64 {
	s := w.spec
	ctx, cancel := context.WithTimeout(context.Background(), s.MaxWait+s.MaxHold+5*time.Second)
	defer cancel()
	pk := storeKey(key)
	ev := Event{T: Mono(), Kind: EvWait, Key: pk, BackMs: back}
	var h holder
	switch s.Variant {
	case VariantSeed:
		lk, err := seedlock.New(w.client, s.Table, seedlock.Params{LockID: key, LockGroup: lockGroup, HolderName: "w" + strconv.Itoa(s.Slot), AccountID: 1, AppID: 1},
			seedlock.WithLease(s.Lease), seedlock.WithPollInterval(s.Poll), seedlock.WithMaxWait(s.MaxWait), seedlock.WithMaxHold(s.MaxHold),
			seedlock.WithClock(w.clock))
		if err != nil {
			panic(err)
		}
		out, err := lk.TryAcquireElseWaitForRelease(ctx)
		ev.Outcome = out.String()
		if err != nil {
			ev.Err = err.Error()
		}
		if out == seedlock.Acquired {
			h = seedHolder{lk}
		}
	default:
		opts := []lockcore.Option{lockcore.WithLease(s.Lease), lockcore.WithPollInterval(s.Poll), lockcore.WithMaxWait(s.MaxWait),
			lockcore.WithMaxHold(s.MaxHold), lockcore.WithClocks(lockcore.Clocks{Wall: w.clock, Allowance: s.ClockAllowance, Drift: s.Drift}),
			lockcore.WithFailureEpisode(lockcore.FailureEpisode{MaxAttempts: s.MaxAttempts}), lockcore.WithStoreCalls(lockcore.StoreCalls{AttemptTimeout: s.AttemptTimeout}),
			lockcore.WithLogger(w.log), lockcore.WithTTL(0), lockcore.WithHerd(lockcore.Herd{HotKeys: w.hot}),
			lockcore.WithMetrics(&w.metrics)}
		if kind == cycleStorm && s.FreshSuccess > 0 {
			opts = append(opts, lockcore.WithFreshSuccess(s.FreshSuccess))
		}
		lk, err := lockcore.New(w.store, lockcore.Params{LockID: key, LockGroup: lockGroup, HolderName: "w" + strconv.Itoa(s.Slot), AccountID: 1, AppID: 1},
			opts...)
		if err != nil {
			panic(err)
		}
		res, err := lk.TryAcquireElseWaitForRelease(ctx)
		ev.Outcome, ev.TookOver = res.Outcome.String(), res.TookOver
		if res.Outcome == lockcore.Released {
			// The fence of the holder that published the success (check 8),
			// and whether the wait read it from an announcement.
			ev.Fence, ev.Announced = res.Fence, res.Announced
		}
		if err != nil {
			ev.Err = err.Error()
			ev.Cause = waitCause(err)
		}
		var hf *lockcore.HolderFailedError
		if errors.As(err, &hf) {
			ev.NotBeforeMs = hf.NotBefore.UnixMilli()
		}
		if res.Outcome == lockcore.Acquired {
			h = coreHolder{Lock: lk, rev: lk.Revision(), store: w.store, stubborn: s.Variant == VariantStubborn}
		}
	}
	ev.T2 = Mono()
	if h != nil {
		ev.Rev, ev.Fence = h.Revision(), h.Fence()
	}
	w.emit(ev)
	switch {
	case h != nil:
		vw := w.watchValid(pk, h)
		if kind == cycleStorm {
			w.holdStorm(ctx, pk, h, vw)
		} else {
			w.hold(ctx, pk, h, kind == cycleHerd, vw)
		}
	case ev.Outcome == "RELEASED":
		present := w.readData(pk)
		w.emit(Event{T: Mono(), Kind: EvRead, Key: pk, Present: present})
	}
	return ev.NotBeforeMs
}

// waitCause classifies the error of a wait (see Event.Cause).
func waitCause(err error) string {
	var ae *lockcore.AcquireError
	switch {
	case errors.Is(err, lockcore.ErrWaitTimeout):
		return causeWaitTimeout
	case errors.Is(err, lockcore.ErrHolderFailed):
		return causeHolderFailed
	case errors.As(err, &ae) && ae.Reason == lockcore.ReasonNoTimeLeft:
		return causeNoTimeLeft
	case errors.As(err, &ae):
		return causeStoreError
	}
	return causeOther
}

// Event.Cause values of waits.
const (
	causeWaitTimeout  = "waitTimeout"
	causeHolderFailed = "holderFailed"
	causeStoreError   = "storeError"
	causeNoTimeLeft   = "noTimeLeft"
	causeOther        = "other"
)

func (w *worker) hold(ctx context.Context, key string, h holder, herd bool, vw *validWatch) {
	fence, rev := h.Fence(), h.Revision()
	wrote := false
	if herd {
		status, retryAfter := w.fetch(key, rev) // the parent may kill us here
		if status != http.StatusOK {
			// Refused: publish the failure with the upstream's pacing.
			o := outcome{reason: "upstream_" + strconv.Itoa(status)}
			if retryAfter > 0 {
				o.notBefore = w.clock.Now().Add(retryAfter)
			}
			w.release(ctx, key, h, fence, rev, o, vw)
			return
		}
		wrote = w.act(key, h, fence, rev)
		sleepCtx(h.Context(), 100*time.Millisecond)
	} else {
		wrote = w.act(key, h, fence, rev)
		sleepCtx(h.Context(), w.workTime())
		wrote = w.act(key, h, fence, rev) || wrote
		if w.rng.Float64() < w.spec.FreezeAfterReturnP {
			// Return from the "handler" without releasing: the parent
			// freezes us, as Lambda freezes a sandbox.
			w.post("/freeze", nil)
		}
	}
	w.release(ctx, key, h, fence, rev, outcome{success: wrote && h.Valid(), reason: "invalid"}, vw)
}

// release releases h, which holds fence and rev, with o and emits the
// release event, after the hold's Valid() watch.
func (w *worker) release(ctx context.Context, key string, h holder, fence int64, rev string, o outcome, vw *validWatch) {
	vw.stop()
	t := Mono()
	err := h.release(ctx, o)
	ev := Event{T: t, T2: Mono(), Kind: EvRelease, Key: key, Fence: fence, Rev: rev, Outcome: "failure"}
	if o.success {
		ev.Outcome = "success"
	}
	if err != nil {
		ev.Err = err.Error()
	}
	w.emit(ev)
}

// act writes to the protected resource if the lease is valid. The true
// time is stamped before the validity check, so a holder that acts after
// its lease shows up with a stamp inside the next holder's grant.
func (w *worker) act(key string, h holder, fence int64, rev string) bool {
	check := Mono()
	if !h.Valid() {
		return false
	}
	var out struct{ Accepted bool }
	ok := w.post("/write", url.Values{"key": {key}, "fence": {strconv.FormatInt(fence, 10)}, "rev": {rev},
		"check": {strconv.FormatInt(check, 10)}}, &out)
	return ok && out.Accepted
}

func (w *worker) readData(key string) bool {
	resp, err := w.http.Get(w.spec.Resource + "/data?key=" + url.QueryEscape(key))
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	var out struct{ Present bool }
	return json.NewDecoder(resp.Body).Decode(&out) == nil && out.Present
}

func (w *worker) post(path string, q url.Values, out ...any) bool {
	if q == nil {
		q = url.Values{}
	}
	q.Set("w", strconv.Itoa(w.spec.Slot))
	resp, err := w.http.Post(w.spec.Resource+path+"?"+q.Encode(), "text/plain", nil)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	if len(out) > 0 {
		return json.NewDecoder(resp.Body).Decode(out[0]) == nil
	}
	io.Copy(io.Discard, resp.Body)
	return true
}

// workTime draws the holder's work: lognormal around WorkMedian, or long.
func (w *worker) workTime() time.Duration {
	if w.rng.Float64() < w.spec.LongWorkP {
		lo, hi := w.spec.LongWorkMin, w.spec.LongWorkMax
		return lo + time.Duration(w.rng.Int64N(int64(hi-lo)+1))
	}
	return time.Duration(float64(w.spec.WorkMedian) * math.Exp(0.5*w.rng.NormFloat64()))
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
