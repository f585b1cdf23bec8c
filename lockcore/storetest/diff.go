package storetest

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/lockcore/storeapi"
)

// DiffOptions configures a differential run ([Diff], [RunDiff]). Zero
// fields take the defaults given.
type DiffOptions struct {
	// Seed makes the run reproducible; 0 draws a random seed (reported).
	Seed uint64
	// Steps is the number of store calls, over all lanes; default 10,000.
	Steps int
	// Lanes is the number of independent step sequences run in parallel,
	// each on keys of its own; default 4.
	Lanes int
	// Keys is the number of keys each lane works on at a time; default 3.
	// Now and then a lane retires a key for a new one, as a TTL deletion
	// would.
	Keys int
	// Model is the store's known deviation from DynamoDB; default
	// [ExactModel].
	Model ServerModel
	// ShrinkTime bounds the search for a shorter failing sequence; default
	// 60 s. Prefix truncation is instant; the budget is for step deletion.
	ShrinkTime time.Duration
}

func (o DiffOptions) withDefaults() DiffOptions {
	if o.Steps <= 0 {
		o.Steps = 10_000
	}
	if o.Lanes <= 0 {
		o.Lanes = 4
	}
	if o.Keys <= 0 {
		o.Keys = 3
	}
	if o.ShrinkTime <= 0 {
		o.ShrinkTime = time.Minute
	}
	return o
}

// DiffReport is the result of a differential run.
type DiffReport struct {
	Seed     uint64
	Steps    int            // store calls made on each store, before any shrinking
	Coverage map[string]int // steps by what the reference did (see categories)
	Modelled int            // steps whose expected answer the server model changed
	Failure  *DiffFailure   // nil when the stores agreed at every step
}

// DiffFailure is a sequence of steps after which the stores disagree,
// shrunk: its last step is the first whose answers differ, and no step could
// be deleted (within the shrink budget) without the disagreement going away.
type DiffFailure struct {
	Lane     int      // the lane that failed first
	Step     int      // index of the failing step in that lane's original sequence
	Steps    []string // the shrunk sequence, each step with the reference's answer
	Server   string   // the last step's answer from the store under test
	Diffs    []string // how it differs from the expected answer
	Complete bool     // shrinking ran to the end within its budget
	Replays  int      // sequences replayed while shrinking
}

func (f *DiffFailure) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "lane %d disagrees at step %d; shortest failing sequence found (%d steps", f.Lane, f.Step, len(f.Steps))
	if !f.Complete {
		b.WriteString(", shrinking stopped at its time budget")
	}
	fmt.Fprintf(&b, ", %d replays):\n", f.Replays)
	for i, s := range f.Steps {
		fmt.Fprintf(&b, "  %3d %s\n", i+1, s)
	}
	fmt.Fprintf(&b, "  store under test: %s\n", f.Server)
	for _, d := range f.Diffs {
		fmt.Fprintf(&b, "    %s\n", d)
	}
	return b.String()
}

// Diff runs a differential test of sut against the reference ref (a
// [lockcore.MemoryStore]): random sequences of Acquire, Renew, Release
// and Get calls, with random clock readings and lease values aimed
// at the edges of every condition, over a few keys, applied step by step to
// both; at every step the outcome (success, *storeapi.ConditionError, other
// error) and the returned item must be the same, after opts.Model's
// documented adjustment. It fails t with the seed and the shortest failing
// sequence it finds, and with the coverage when some kind of step never
// happened. Both stores may be shared with other tests: every run and
// every replay uses keys of its own.
func Diff(t *testing.T, ref, sut storeapi.Store, opts DiffOptions) *DiffReport {
	t.Helper()
	start := time.Now()
	rep, err := RunDiff(t.Context(), ref, sut, opts)
	if err != nil {
		t.Fatalf("RunDiff() = %v", err)
	}
	t.Logf("differential run against %s: seed %d, %d steps, %s; %d steps expected as the model says; coverage %v",
		opts.Model.Name(), rep.Seed, rep.Steps, time.Since(start).Round(time.Millisecond), rep.Modelled, rep.Coverage)
	if rep.Failure != nil {
		t.Errorf("stores disagree (seed %d, %d steps, model %s); %s", rep.Seed, rep.Steps, opts.Model.Name(), rep.Failure)
		return rep
	}
	// The rarest kinds (a Get of a key not yet written) come some ten
	// times in 10,000 steps: a shorter run may miss one by chance.
	if missing := rep.Missing(); len(missing) > 0 && rep.Steps >= 10_000 {
		t.Errorf("seed %d: %d steps never covered %s; coverage %v", rep.Seed, rep.Steps, strings.Join(missing, ", "), rep.Coverage)
	}
	return rep
}

// RunDiff is [Diff] without a testing.T: it returns the report, whose
// Failure is set when the stores disagreed. The error is for a run that
// could not be made (a cancelled ctx).
func RunDiff(ctx context.Context, ref, sut storeapi.Store, opts DiffOptions) (*DiffReport, error) {
	opts = opts.withDefaults()
	if opts.Seed == 0 {
		var b [8]byte
		rand.Read(b[:])
		opts.Seed = binary.LittleEndian.Uint64(b[:]) | 1
	}
	r := &runner{ref: ref, sut: sut, opts: opts, prefix: "diff-" + randomHex(6)}
	perLane := (opts.Steps + opts.Lanes - 1) / opts.Lanes
	results := make([]laneResult, opts.Lanes)
	var wg sync.WaitGroup
	for l := range opts.Lanes {
		wg.Go(func() { results[l] = r.generate(ctx, l, perLane) })
	}
	wg.Wait()
	rep := &DiffReport{Seed: opts.Seed, Coverage: make(map[string]int)}
	var failed *laneResult
	for l := range results {
		res := &results[l]
		if res.err != nil {
			return nil, res.err
		}
		rep.Steps += len(res.ops)
		rep.Modelled += res.modelled
		for c, n := range res.coverage {
			rep.Coverage[c] += n
		}
		if res.failAt >= 0 && failed == nil {
			failed = res
		}
	}
	if failed != nil {
		f, err := r.shrink(ctx, failed)
		if err != nil {
			return nil, err
		}
		rep.Failure = f
	}
	return rep, nil
}

// categories are the kinds of step a run of a few thousand steps must
// contain, named by what the reference did.
var categories = []string{
	"acquire/absent", "acquire/released", "acquire/after-failure", "acquire/wall-clock", "acquire/observed",
	"acquire/own-write", "acquire/refused-fresh-success", "acquire/refused-held-back-failure", "acquire/refused-held",
	"renew/ok", "renew/beat-only", "renew/refused-revision", "renew/refused-released", "renew/absent",
	"release/success", "release/answer", "release/failure", "release/free-keep-episode", "release/retried", "release/own-publication",
	"release/recorded-publication", "release/free-unheld", "release/refused-result", "release/refused-revision", "release/refused-over-operator", "release/operator-clears",
	"get/found", "get/absent", "invalid",
	"acquire/refused-own-revision", "announce/applied", "announce/refused", "get-announcement/found", "get-announcement/absent",
}

// Missing returns the categories no step of the run fell into.
func (r *DiffReport) Missing() []string {
	var m []string
	for _, c := range categories {
		if r.Coverage[c] == 0 {
			m = append(m, c)
		}
	}
	return m
}

// runner holds what every lane and replay of one run shares.
type runner struct {
	ref, sut storeapi.Store
	opts     DiffOptions
	prefix   string

	mu      sync.Mutex // guards attempt
	attempt int        // key namespaces handed out

	failed atomic.Bool // a lane has found a difference: the others stop
}

// laneResult is one lane's generated sequence: ops up to and including the
// first disagreement, whose index is failAt (-1: none).
type laneResult struct {
	lane     int
	ops      []op
	failAt   int
	coverage map[string]int
	modelled int
	err      error
}

// stepper applies steps to both stores, in a key namespace no other
// stepper uses.
type stepper struct {
	r     *runner
	group string
	model modelState
	prev  map[int]*storeapi.Item // the reference's item of each key index
}

func (r *runner) newStepper(lane int) *stepper {
	r.mu.Lock()
	r.attempt++
	a := r.attempt
	r.mu.Unlock()
	return &stepper{
		r:     r,
		group: fmt.Sprintf("%s/l%d/a%06d", r.prefix, lane, a), // one length, so one item size
		model: r.opts.Model.state(),
		prev:  make(map[int]*storeapi.Item),
	}
}

// step applies o to the reference and then to the store under test, and
// returns both answers and their differences.
func (s *stepper) step(ctx context.Context, o op) (ref, got outcome, diffs []string, err error) {
	ref, got, _, diffs, err = s.stepModelled(ctx, o)
	return ref, got, diffs, err
}

// stepModelled is step that also reports whether the server model changed
// the expected answer.
func (s *stepper) stepModelled(ctx context.Context, o op) (ref, got outcome, modelled bool, diffs []string, err error) {
	k := lockcore.Key{Group: s.group, ID: fmt.Sprintf("k%d", o.key)}
	ref = o.apply(ctx, s.r.ref, k)
	got = o.apply(ctx, s.r.sut, k)
	if err := ctx.Err(); err != nil {
		return ref, got, false, nil, fmt.Errorf("storetest: differential run: %w", context.Cause(ctx))
	}
	prev := s.prev[o.key]
	want := s.model.expect(o, prev, ref)
	if ref.class != classError && ref.item != nil {
		s.prev[o.key] = ref.item
	}
	modelled = len(differences(want, ref)) > 0
	return ref, got, modelled, differences(got, want), nil
}

// generate draws and applies up to n steps of one lane, stopping at the
// first disagreement, or when another lane has found one (the run is
// reported from the first lane to fail; each lane's sequence depends on the
// seed alone, so the seed reproduces it).
func (r *runner) generate(ctx context.Context, lane, n int) laneResult {
	res := laneResult{lane: lane, failAt: -1, coverage: make(map[string]int)}
	g := newGenerator(r.opts.Seed, lane, r.opts.Keys)
	s := r.newStepper(lane)
	for i := range n {
		if r.failed.Load() {
			return res
		}
		o := g.next()
		prev := s.prev[o.key]
		ref, _, modelled, diffs, err := s.stepModelled(ctx, o)
		if err != nil {
			res.err = err
			return res
		}
		res.ops = append(res.ops, o)
		res.coverage[category(o, prev, ref)]++
		if modelled {
			res.modelled++
		}
		if len(diffs) > 0 {
			res.failAt = i
			r.failed.Store(true)
			return res
		}
		g.observe(o, ref)
	}
	return res
}

// replay applies ops on fresh keys and returns the index of the first step
// whose answers differ, or -1.
func (r *runner) replay(ctx context.Context, lane int, ops []op) (int, error) {
	s := r.newStepper(lane)
	for i, o := range ops {
		_, _, diffs, err := s.step(ctx, o)
		if err != nil {
			return -1, err
		}
		if len(diffs) > 0 {
			return i, nil
		}
	}
	return -1, nil
}

// category names what the reference did at step o (see categories).
func category(o op, prev *storeapi.Item, ref outcome) string {
	if ref.class == classError {
		return "invalid"
	}
	ok := ref.class == classOK
	switch o.kind {
	case opAcquire:
		r := o.acquire
		limit := r.NowMs - r.ClockAllowance.Milliseconds()
		switch {
		case prev == nil:
			return "acquire/absent"
		case ok && !acquireApplied(prev, ref):
			return "acquire/own-write"
		case ok && prev.Released && prev.Result == lockcore.Failure && r.MaxAttempts > 0:
			return "acquire/after-failure"
		case ok && prev.Released:
			return "acquire/released"
		case ok && r.UseWallClock && (prev.ExpiresAtMs < limit || prev.LeaseUntilMs < limit):
			return "acquire/wall-clock"
		case ok:
			return "acquire/observed"
		case prev.Revision == r.Revision && prev.Released:
			return "acquire/refused-own-revision"
		case prev.Released && prev.Result == lockcore.Success && r.FreshSuccessSinceMs != 0 && prev.ReleasedAtMs >= r.FreshSuccessSinceMs:
			return "acquire/refused-fresh-success"
		case prev.Released && prev.Result == lockcore.Failure && r.MaxAttempts > 0 && prev.FailRecentUntilMs > r.NowMs &&
			prev.NotBeforeMs > r.NowMs:
			return "acquire/refused-held-back-failure"
		default:
			return "acquire/refused-held"
		}
	case opRenew:
		switch {
		case ok && o.renew.LeaseUntilMs < prev.LeaseUntilMs:
			return "renew/beat-only"
		case ok:
			return "renew/ok"
		case prev == nil:
			return "renew/absent"
		case prev.Revision != o.renew.Revision:
			return "renew/refused-revision"
		default:
			return "renew/refused-released"
		}
	case opRelease:
		r := o.release
		switch {
		case ok && prev.Revision != r.Revision && prev.PrevRevision != r.Revision:
			return "release/recorded-publication"
		case ok && prev.Revision != r.Revision:
			return "release/own-publication"
		case ok && prev.Released && r.FailReason == storeapi.OperatorReleaseReason && !r.KeepEpisode &&
			prev.FailReason != storeapi.OperatorReleaseReason:
			return "release/operator-clears"
		case ok && prev.Released:
			return "release/retried"
		case ok && r.Unheld:
			return "release/free-unheld"
		case ok && r.Result == lockcore.Failure && r.KeepEpisode:
			return "release/free-keep-episode"
		case ok && r.Result == lockcore.Failure:
			return "release/failure"
		case ok && len(r.Answer) > 0:
			return "release/answer"
		case ok:
			return "release/success"
		case prev != nil && prev.Revision == r.Revision && prev.Released && prev.Result == r.Result &&
			prev.FailReason == storeapi.OperatorReleaseReason:
			return "release/refused-over-operator"
		case prev != nil && prev.Revision == r.Revision:
			return "release/refused-result"
		default:
			return "release/refused-revision"
		}
	case opAnnounce:
		if ref.applied {
			return "announce/applied"
		}
		return "announce/refused"
	case opGetAnnouncement:
		if ref.ann != nil {
			return "get-announcement/found"
		}
		return "get-announcement/absent"
	default:
		if ref.item != nil {
			return "get/found"
		}
		return "get/absent"
	}
}

// errBudget ends a shrink attempt at the time budget.
var errBudget = errors.New("shrink budget spent")

// describe replays ops once more and prints them with the reference's
// answers, and the last step's answer from the store under test.
func (r *runner) describe(ctx context.Context, lane int, ops []op) (steps []string, server string, diffs []string, err error) {
	s := r.newStepper(lane)
	for _, o := range ops {
		ref, got, d, err := s.step(ctx, o)
		if err != nil {
			return nil, "", nil, err
		}
		steps = append(steps, o.String()+"\n        reference: "+ref.String())
		server, diffs = got.String(), d
	}
	return steps, server, slices.Clip(diffs), nil
}
