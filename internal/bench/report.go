package bench

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// Sides and settings of a cmd/bench run, named in the table.
const (
	SideHerdlock        = "herdlock"
	SideHerdlockNoCap   = "herdlock, no read cap"
	SideBaseline        = "baseline"
	SideBaselineLiteral = "baseline, failed put = FAILED"
)

// Verdict returns "met" or "MISSED".
func Verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "MISSED"
}

// RequestTime is the median time of one raw UpdateItem in the run, the
// "request" of the latency targets.
func (r *Results) RequestTime() time.Duration {
	return time.Duration(r.Uncontended.TwoUpdateItemsUs / 2 * float64(time.Microsecond))
}

// HerdP99Target returns the strict target of a herdlock herd's p99: one
// poll interval plus two requests.
func (r *Results) HerdP99Target() float64 {
	return r.Settings.PollMs + 2*ms(r.RequestTime())
}

// HerdP99Bound returns the p99 bound that the design gives at n waiters:
// the poll interval stretched by the read-rate cap (n-1 enrolled waiters at
// MaxReadRate reads per second) plus its +20% jitter, plus two requests.
func (r *Results) HerdP99Bound(n int) float64 {
	interval := r.Settings.PollMs
	if r.Settings.MaxReadRate > 0 {
		interval = max(interval, float64(n-1)/r.Settings.MaxReadRate*1000)
	}
	return 1.2*interval + 2*ms(r.RequestTime())
}

// Herd returns the herd of side with n invocations.
func (r *Results) Herd(side string, n int) (HerdResult, bool) {
	for _, h := range r.Herds {
		if h.Side == side && h.N == n {
			return h, true
		}
	}
	return HerdResult{}, false
}

// Op returns the request count of side's op.
func (r *Results) Op(side, op string) (OpCount, bool) {
	for _, o := range r.Requests {
		if o.Side == side && o.Op == op {
			return o, true
		}
	}
	return OpCount{}, false
}

// Abandon returns the abandoned-holder result of side.
func (r *Results) Abandon(side string) (AbandonedResult, bool) {
	for _, a := range r.Abandoned {
		if a.Side == side {
			return a, true
		}
	}
	return AbandonedResult{}, false
}

// WriteTable prints the one table of a run.
func WriteTable(w io.Writer, r *Results) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(cols ...string) { fmt.Fprintln(tw, strings.Join(cols, "\t")) }
	row("#", "measure", "herdlock", "baseline", "target", "verdict")
	row("-", "-------", "--------", "--------", "------", "-------")

	// 1. Requests per operation.
	for _, op := range []string{OpAcquire, OpRelease, OpAcquireRelease, OpRenew, OpPoll, OpWaitOverhead} {
		h, _ := r.Op(SideHerdlock, op)
		b, _ := r.Op(SideBaseline, op)
		target, verdict := "", ""
		switch op {
		case OpAcquire, OpRelease, OpRenew, OpPoll:
			target, verdict = "herdlock 1", Verdict(h.PerOp == 1)
		}
		row("1", "requests: "+op, opText(h), opText(b), target, verdict)
	}

	// 2. Uncontended cost.
	u, bu := r.Uncontended, r.BaselineAR
	row("2", fmt.Sprintf("two raw UpdateItem, median (%d / %d rounds)", u.Rounds, bu.Rounds),
		fmt.Sprintf("%.0f us", u.TwoUpdateItemsUs), fmt.Sprintf("%.0f us", bu.TwoUpdateItemsUs), "", "")
	row("2", "acquire + release / two UpdateItem",
		fmt.Sprintf("%.2fx (%.0f us)", u.AcquireReleaseRatio, u.AcquireReleaseUs),
		fmt.Sprintf("%.2fx (%.0f us)", bu.AcquireReleaseRatio, bu.AcquireReleaseUs),
		"<= 1.10", Verdict(u.AcquireReleaseRatio <= 1.10))
	row("2", "lockmw.Wrap(no-op) / two UpdateItem",
		fmt.Sprintf("%.2fx (%.0f us)", u.WrapRatio, u.WrapUs), "-", "<= 1.10", Verdict(u.WrapRatio <= 1.10))
	row("2", "  lock's own 2 requests replayed raw, median", fmt.Sprintf("%.0f us", u.SameShapeUs), "", "", "")
	row("2", "  acquire + release / those, Wrap / those",
		fmt.Sprintf("%.2fx, %.2fx", u.AcquireReleaseOver, u.WrapOver), "", "", "")
	if d := r.UncontendedDynalite; d != nil {
		row("2 dynalite", "acquire + release / two UpdateItem",
			fmt.Sprintf("%.2fx (%.0f / %.0f us)", d.AcquireReleaseRatio, d.AcquireReleaseUs, d.TwoUpdateItemsUs), "", "", "")
		row("2 dynalite", "  lock's own 2 requests replayed raw / two UpdateItem",
			fmt.Sprintf("%.2fx (%.0f us)", d.SameShapeUs/d.TwoUpdateItemsUs, d.SameShapeUs), "", "", "")
	}

	// 3. Herds.
	for _, n := range herdSizes(r) {
		h, _ := r.Herd(SideHerdlock, n)
		b, _ := r.Herd(SideBaseline, n)
		p := fmt.Sprintf("3 N=%d", n)
		row(p, "upstream calls", fmt.Sprint(h.Upstream), fmt.Sprint(b.Upstream), "1", Verdict(h.Upstream == 1))
		row(p, "outcomes", outcomes(h), outcomes(b), "", "")
		if bl, ok := r.Herd(SideBaselineLiteral, n); ok {
			row(p, "outcomes, seedlock as is (failed put = FAILED)", "", outcomes(bl), "", "")
		}
		row(p, "release-to-return p50/p99/max", lat(h.Latency), lat(b.Latency),
			fmt.Sprintf("p99 <= %.0f ms", r.HerdP99Target()), Verdict(h.Latency.N > 0 && h.Latency.P99 <= r.HerdP99Target()))
		row(p, "  with cap and +20% jitter: bound", fmt.Sprintf("%.0f ms", r.HerdP99Bound(n)), "", "p99 <= bound",
			Verdict(h.Latency.N > 0 && h.Latency.P99 <= r.HerdP99Bound(n)))
		row(p, "DynamoDB requests (per invocation)", reqs(h), reqs(b), "", "")
		row(p, "first response per invocation p50/max", lat2(h.FirstResponse), lat2(b.FirstResponse), "", "")
		row(p, "holder's release: called at, took", fmt.Sprintf("%.0f ms, %.0f ms", h.ReleaseAtMs, h.ReleaseCallMs),
			fmt.Sprintf("%.0f ms, %.0f ms", b.ReleaseAtMs, b.ReleaseCallMs), "", "")
		row(p, "mean reads/s on the item", fmt.Sprintf("%.0f", h.MeanReadRate), fmt.Sprintf("%.0f", b.MeanReadRate), "", "")
		row(p, "peak reads/s on the item (100 ms windows)", fmt.Sprintf("%.0f", h.PeakReadRate), fmt.Sprintf("%.0f", b.PeakReadRate),
			fmt.Sprintf("<= cap %.0f/s", r.Settings.MaxReadRate), Verdict(h.PeakReadRate <= r.Settings.MaxReadRate))
		if nc, ok := r.Herd(SideHerdlockNoCap, n); ok {
			row(p, "  herdlock without the cap: peak reads/s, p99", fmt.Sprintf("%.0f, %.0f ms", nc.PeakReadRate, nc.Latency.P99), "", "", "")
		}
	}

	// 4. Abandoned holder.
	h, _ := r.Abandon(SideHerdlock)
	b, _ := r.Abandon(SideBaseline)
	target := h.LeaseMs + 2*h.PollMs
	row("4", fmt.Sprintf("death to next holder p50/max (%d trials, lease %.0f ms)", len(h.Trials), h.LeaseMs),
		fmt.Sprintf("%.0f / %.0f ms", h.NextHolder.P50, h.NextHolder.Max), nextHolderText(b),
		fmt.Sprintf("<= %.0f ms", target), Verdict(h.NextHolder.N == len(h.Trials) && h.NextHolder.Max <= target))
	row("4", "RELEASED with nothing stored", fmt.Sprintf("%d of %d", h.EmptyReleased, h.Released),
		fmt.Sprintf("%d of %d", b.EmptyReleased, b.Released), "0", Verdict(h.EmptyReleased == 0))

	// 5. Cold start.
	cs := r.ColdStart
	if cs.Ran {
		row("5", "bootstrap size ("+cs.Arch+"), example vs bare handler", mb(cs.ExampleBytes), "bare: "+mb(cs.BareBytes), "", "")
		row("5", fmt.Sprintf("first invoke p50/max (%d fresh emulators)", cs.Trials),
			fmt.Sprintf("%.1f / %.1f ms", cs.ExampleFirst.P50, cs.ExampleFirst.Max),
			fmt.Sprintf("bare: %.1f / %.1f ms", cs.BareFirst.P50, cs.BareFirst.Max), "", "")
		row("5", "second invoke p50", fmt.Sprintf("%.1f ms", cs.ExampleSecond.P50), fmt.Sprintf("bare: %.1f ms", cs.BareSecond.P50), "", "")
		row("5", "init = first - second, p50/max",
			fmt.Sprintf("%.1f / %.1f ms", cs.ExampleInit.P50, cs.ExampleInit.Max),
			fmt.Sprintf("bare: %.1f / %.1f ms", cs.BareInit.P50, cs.BareInit.Max), "", fmt.Sprintf("%.1fx bare", cs.InitRatio))
	} else {
		row("5", "cold start", "not measured: "+cs.Note, "", "", "")
	}

	// 6. CPU.
	for _, b := range r.CPU.Benchmarks {
		row("6", shortPkg(b.Pkg)+" "+b.Name, fmt.Sprintf("%.0f ns/op, %.0f B/op, %.0f allocs/op", b.NsPerOp, b.BytesPerOp, b.AllocsPerOp), "", "", "")
	}
	if r.CPU.Note != "" {
		row("6", "note", r.CPU.Note, "", "", "")
	}

	// 9. Failing upstream.
	writeFailingRows(row, r)
	return tw.Flush()
}

func herdSizes(r *Results) []int {
	var ns []int
	for _, h := range r.Herds {
		if h.Side == SideHerdlock {
			ns = append(ns, h.N)
		}
	}
	return ns
}

func opText(o OpCount) string {
	if o.Op == "" {
		return "-"
	}
	var parts []string
	for _, k := range []string{"UpdateItem", "PutItem", "GetItem"} {
		if v := o.Requests.ByOp[k]; v > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", v, k))
		}
	}
	return fmt.Sprintf("%.3g (%s)", o.PerOp, strings.Join(parts, ", "))
}

func outcomes(h HerdResult) string {
	if h.N == 0 {
		return "-"
	}
	var parts []string
	for _, o := range []Outcome{Acquired, TookOver, Released, Failed} {
		if v := h.Outcomes[o]; v > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", v, o))
		}
	}
	if h.EmptyReleased > 0 {
		parts = append(parts, fmt.Sprintf("%d empty", h.EmptyReleased))
	}
	return strings.Join(parts, ", ")
}

func lat(s Summary) string {
	if s.N == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f / %.0f / %.0f ms", s.P50, s.P99, s.Max)
}

func lat2(s Summary) string {
	if s.N == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f / %.0f ms", s.P50, s.Max)
}

func reqs(h HerdResult) string {
	if h.N == 0 {
		return "-"
	}
	return fmt.Sprintf("%d (%.1f)", h.Requests.Total, float64(h.Requests.Total)/float64(h.N))
}

func nextHolderText(a AbandonedResult) string {
	if a.NextHolder.N == 0 {
		var back []float64
		for _, t := range a.Trials {
			back = append(back, t.WaitersReturn.P50)
		}
		s := Summarize(back)
		return fmt.Sprintf("none: waiters return RELEASED after %.0f ms (p50)", s.P50)
	}
	return fmt.Sprintf("%.0f / %.0f ms", a.NextHolder.P50, a.NextHolder.Max)
}

func mb(b int64) string { return fmt.Sprintf("%.2f MB", float64(b)/(1<<20)) }

func shortPkg(p string) string {
	return strings.TrimPrefix(p, "github.com/herdlock/herdlock/")
}
