package bench

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// WriteHotTable prints the hot-key herds, one row per herd, with the
// verdict of each target.
func WriteHotTable(w io.Writer, rs []HotResult, t HotTargets) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "mode\tkey\tN\tarrival/work\tcalls over\tACQ/REL/FAIL\tfetches\tlease lost\tenvs\tWCU\tRCU\twrites/inv\trequests/inv\tthrottled\tthrottles\tann. reads/writes/announced\trelease-to-return p50/p99/max ms\tverdicts")
	for _, r := range rs {
		var vs []string
		for _, v := range r.Verdicts(t) {
			vs = append(vs, v.Target+": "+Verdict(v.Met))
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%d/%d/%d\t%d\t%s\t%d\t%.0f\t%.0f\t%.3f\t%.3f\t%d/%d (%.1f%%)\t%s\t%d/%d/%d\t%.0f/%.0f/%.0f\t%s\n",
			r.Mode, keyTemp(r), r.N, shape(r), time.Duration(r.CallSpanMs*float64(time.Millisecond)).Round(time.Millisecond), r.Outcomes[Acquired]+r.Outcomes[TookOver], r.Outcomes[Released], r.Outcomes[Failed],
			r.Fetches, yesNo(r.LeaseLost > 0), r.Environments, r.WCU, r.RCU, r.WritesPerInvocation,
			r.RequestsPerInvocation(), r.Throttled, r.Requests, 100*r.ThrottledShare(), throttleText(r.Throttles),
			r.AnnReads, r.AnnWrites, r.Announced, r.Latency.P50, r.Latency.P99, r.Latency.Max, strings.Join(vs, ", "))
	}
	return tw.Flush()
}

// keyTemp is "cold", or "warm" with the key's earlier holds.
func keyTemp(r HotResult) string {
	if r.WarmHolds > 0 {
		return fmt.Sprintf("warm (%d)", r.WarmHolds)
	}
	return "cold"
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func throttleText(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	var ops []string
	for op := range m {
		ops = append(ops, op)
	}
	sort.Strings(ops)
	var parts []string
	for _, op := range ops {
		parts = append(parts, fmt.Sprintf("%s %d", op, m[op]))
	}
	return strings.Join(parts, ", ")
}

func shape(r HotResult) string {
	return fmt.Sprintf("%v/%v", time.Duration(r.ArrivalMs*float64(time.Millisecond)), time.Duration(r.WorkMs*float64(time.Millisecond)))
}
