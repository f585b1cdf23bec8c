package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/herdlock/herdlock/internal/capacity"
	"github.com/herdlock/herdlock/lockcore"
)

// The brownout figure: a table that answers every call slowly, but
// answers (capacity.Latency in front of the capacity model), at each of
// BrownoutAnswers; the attempt timeout is lockcore's default, 500 ms. A
// herd of N on one key arriving over HotArrival (on Dynoxide in real time,
// and simulated in a synctest bubble), and one hold of BrownoutHold at the
// first answer time.
var BrownoutAnswers = []time.Duration{700 * time.Millisecond, 1500 * time.Millisecond}

// BrownoutHold is how long the brownout figure's holder holds the lock.
const BrownoutHold = 20 * time.Second

// BrownoutHoldResult is one hold in a brownout.
type BrownoutHoldResult struct {
	Real     bool    `json:"real,omitempty"` // on Dynoxide in real time; else simulated
	AnswerMs float64 `json:"answerMs"`
	HoldMs   float64 `json:"holdMs"`
	// KeptLease is true when the holder stayed Valid for the whole hold
	// and its release published.
	KeptLease bool   `json:"keptLease"`
	Renewals  int64  `json:"renewals"` // renewals the server applied (the item's beat)
	Error     string `json:"error,omitempty"`
}

// Slowed returns an env like e whose clients wait answer for every answer,
// the request applied halfway (see capacity.Latency).
func (e *HotEnv) Slowed(answer time.Duration) *HotEnv {
	s := *e
	s.rt = capacity.Latency(e.rt, func() time.Duration { return answer })
	return &s
}

// brownoutMode is the mode of the brownout herds: lockcore with lockmw's
// fresh-success window, each invocation a new execution environment,
// named after the answer time so that each herd has its own key.
func brownoutMode(answer time.Duration) HotMode {
	m := HotModes()[0]
	m.Name = "brownout-" + answer.String()
	return m
}

// RunBrownoutHerds runs, on env, a herd of n at each of BrownoutAnswers,
// and one hold of BrownoutHold at the first.
func RunBrownoutHerds(ctx context.Context, env *HotEnv, n int) ([]HotResult, BrownoutHoldResult) {
	var rs []HotResult
	for _, answer := range BrownoutAnswers {
		rs = append(rs, RunHot(ctx, env.Slowed(answer), brownoutMode(answer), n))
		time.Sleep(HotSettle)
	}
	return rs, RunBrownoutHold(ctx, env.Slowed(BrownoutAnswers[0]), BrownoutAnswers[0], BrownoutHold)
}

// RunBrownoutHold acquires a fresh key through env (whose answers take
// answer), holds it for hold, checking Valid every 100 ms, and releases it.
func RunBrownoutHold(ctx context.Context, env *HotEnv, answer, hold time.Duration) BrownoutHoldResult {
	r := BrownoutHoldResult{Real: env.Real, AnswerMs: ms(answer), HoldMs: ms(hold)}
	store, err := lockcore.NewDynamoStore(env.NewClient(), LockTable)
	if err != nil {
		r.Error = err.Error()
		return r
	}
	key := keyName("brownout-hold-" + answer.String())
	l, err := lockcore.New(store, lockcore.Params{LockID: key, LockGroup: "bench", HolderName: "holder", AccountID: 1, AppID: 1},
		lockcore.WithLogger(discard))
	if err != nil {
		r.Error = err.Error()
		return r
	}
	res, err := l.TryAcquireElseWaitForRelease(ctx)
	if res.Outcome != lockcore.Acquired {
		r.Error = fmt.Sprintf("acquire: %v, %v", res.Outcome, err)
		return r
	}
	valid := true
	for start := time.Now(); time.Since(start) < hold && valid; {
		time.Sleep(100 * time.Millisecond)
		valid = l.Valid()
	}
	err = l.Release(ctx, lockcore.Success, key)
	r.KeptLease = valid && err == nil
	if err != nil {
		r.Error = err.Error()
	} else if !valid {
		r.Error = fmt.Sprintf("not valid during the hold: %v", context.Cause(l.Context()))
	}
	if it, found, gerr := store.Get(ctx, l.Key()); gerr == nil && found {
		r.Renewals = it.Beat
	}
	return r
}

// RunRealBrownout runs the brownout figure on env's Dynoxide behind the
// capacity model at DynamoDB's limits, in real time.
func RunRealBrownout(ctx context.Context, env *Env, n int) ([]HotResult, BrownoutHoldResult, error) {
	hot, err := StartRealHotEnv(ctx, env.Server.Endpoint(), capacity.Config{})
	if err != nil {
		return nil, BrownoutHoldResult{}, err
	}
	rs, h := RunBrownoutHerds(ctx, hot, n)
	return rs, h, nil
}

// Environment of TestBrownoutFigure, which runs the simulated brownout
// figure in a synctest bubble for cmd/bench.
const (
	BrownoutFigureOutEnv  = "HERDLOCK_BROWNOUT_FIGURE_OUT"
	BrownoutFigureSizeEnv = "HERDLOCK_BROWNOUT_FIGURE_N"
)

// brownoutFigure is what TestBrownoutFigure writes.
type brownoutFigure struct {
	Herds []HotResult        `json:"herds"`
	Hold  BrownoutHoldResult `json:"hold"`
}

// RunSimBrownout runs the simulated brownout figure with herds of n: `go
// test -run TestBrownoutFigure` on this package in the module at root,
// because testing/synctest needs a test.
func RunSimBrownout(ctx context.Context, root string, n int) ([]HotResult, BrownoutHoldResult, error) {
	dir, err := os.MkdirTemp("", "herdlock-brownout-")
	if err != nil {
		return nil, BrownoutHoldResult{}, err
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "brownout.json")
	cmd := exec.CommandContext(ctx, "go", "test", "-run", "^TestBrownoutFigure$", "-count", "1", "-timeout", "30m", "./internal/bench")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), BrownoutFigureOutEnv+"="+out, BrownoutFigureSizeEnv+"="+fmt.Sprint(n))
	if b, err := cmd.CombinedOutput(); err != nil {
		return nil, BrownoutHoldResult{}, fmt.Errorf("bench: brownout figure: %v: %s", err, lastLines(b, 8))
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		return nil, BrownoutHoldResult{}, err
	}
	var f brownoutFigure
	if err := json.Unmarshal(raw, &f); err != nil {
		return nil, BrownoutHoldResult{}, fmt.Errorf("bench: brownout figure: %w", err)
	}
	return f.Herds, f.Hold, nil
}

// writeBrownoutFigure runs the simulated figure (in a synctest bubble) and
// writes it to out.
func writeBrownoutFigure(ctx context.Context, out string, n int) error {
	env, err := StartHotEnv(ctx, capacity.Config{})
	if err != nil {
		return err
	}
	var f brownoutFigure
	f.Herds, f.Hold = RunBrownoutHerds(ctx, env, n)
	raw, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(out, raw, 0o644)
}

// WriteBrownoutTable prints the brownout herds and holds, with the
// verdicts: 1 fetch, 0 FAILED, no lease lost; the hold keeps its lease.
func WriteBrownoutTable(w io.Writer, herds []HotResult, holds []BrownoutHoldResult) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "server\tevery answer after\tN\tACQ/REL/FAIL\tfetches\tlease lost\trequests/inv\trelease-to-return p50/p99/max ms\tverdicts")
	for _, r := range herds {
		answer := r.Mode[len("brownout-"):]
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d/%d/%d\t%d\t%s\t%.2f\t%.0f/%.0f/%.0f\t1 fetch: %s, 0 FAILED: %s\n",
			serverName(r.Real), answer, r.N, r.Outcomes[Acquired]+r.Outcomes[TookOver], r.Outcomes[Released], r.Outcomes[Failed],
			r.Fetches, yesNo(r.LeaseLost > 0), r.RequestsPerInvocation(), r.Latency.P50, r.Latency.P99, r.Latency.Max,
			Verdict(r.Fetches == 1), Verdict(r.Outcomes[Failed] == 0))
	}
	for _, h := range holds {
		note := ""
		if h.Error != "" {
			note = " (" + h.Error + ")"
		}
		fmt.Fprintf(tw, "%s\t%v\thold %v\t\t\t\t\trenewals applied: %d\tkeeps its lease: %s%s\n",
			serverName(h.Real), time.Duration(h.AnswerMs*float64(time.Millisecond)), time.Duration(h.HoldMs*float64(time.Millisecond)),
			h.Renewals, Verdict(h.KeptLease), note)
	}
	return tw.Flush()
}

func serverName(real bool) string {
	if real {
		return "Dynoxide"
	}
	return "simulated"
}
