// Command plot draws the herd figures of a cmd/bench run as an SVG: the
// waiters' release-to-return latency (p50 and p99, max as a tick) against
// the herd size N, on logarithmic axes; one panel for figure 3 (herdlock
// and the baseline on the real server), one for figure 8 (the simulated
// hot-key herds arriving over a second, cold and warm keys).
//
//	go run ./internal/bench/cmd/plot -in bench.out/results.json -out docs/herd-latency.svg
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/herdlock/herdlock/internal/bench"
)

func main() {
	in := flag.String("in", "bench.out/results.json", "raw numbers written by cmd/bench")
	out := flag.String("out", "docs/herd-latency.svg", "SVG to write")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("plot: ")
	raw, err := os.ReadFile(*in)
	if err != nil {
		log.Fatal(err)
	}
	var r bench.Results
	if err := json.Unmarshal(raw, &r); err != nil {
		log.Fatalf("%s: %v", *in, err)
	}
	svg, err := render(&r)
	if err != nil {
		log.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(*out), 0o755); err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(*out, []byte(svg), 0o644); err != nil {
		log.Fatal(err)
	}
}

// point is one herd: its size and its release-to-return latencies.
type point struct {
	n   int
	lat bench.Summary
}

// series is one line pair (p99 solid, p50 dashed) of a panel.
type series struct {
	name  string
	color string
	pts   []point
}

// panel is one chart: a title, a note, its series and a target line (0:
// none).
type panel struct {
	title, note string
	series      []series
	target      float64
	targetLabel string
	xLabel      string
}

const (
	width, panelH = 760, 420
	left, right   = 70, 240
	top, bottom   = 50, 60
)

// render draws figure 3's herds (herdlock against the baseline, on the
// real server) and, when the run has them, figure 8's simulated hot-key
// herds (cold and warm keys), one panel each.
func render(r *bench.Results) (string, error) {
	var panels []panel
	if p, ok := herdPanel(r); ok {
		panels = append(panels, p)
	}
	if p, ok := hotPanel(r); ok {
		panels = append(panels, p)
	}
	if len(panels) == 0 {
		return "", fmt.Errorf("no herd latencies in the results")
	}
	height := panelH * len(panels)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", width, height)
	for i, p := range panels {
		drawPanel(&b, float64(i*panelH), p)
	}
	b.WriteString("</svg>\n")
	return b.String(), nil
}

func herdPanel(r *bench.Results) (panel, bool) {
	p := panel{
		title: "Herd: waiters' release-to-return latency against N (log scales)",
		note: fmt.Sprintf("holder works %.0f ms; herdlock polls every %.0f ms; baseline every %.0f ms; %s, %d x %s",
			r.Settings.HerdWorkMs, r.Settings.PollMs, r.Settings.BaselinePollMs, r.Settings.Server, r.Machine.NumCPU, r.Machine.CPUModel),
		target: r.HerdP99Target(), targetLabel: "target: poll + 2 requests",
		xLabel: "N, concurrent invocations on one key",
	}
	any := false
	for _, side := range []struct{ name, color string }{{bench.SideHerdlock, "#1f77b4"}, {bench.SideBaseline, "#d62728"}} {
		s := series{name: side.name, color: side.color}
		for _, h := range r.Herds {
			if h.Side == side.name && h.Latency.N > 0 {
				s.pts = append(s.pts, point{h.N, h.Latency})
			}
		}
		if len(s.pts) > 0 {
			any = true
			p.series = append(p.series, s)
		}
	}
	return p, any
}

// hotPanel is figure 8's herds arriving over one second, by mode and key.
func hotPanel(r *bench.Results) (panel, bool) {
	p := panel{
		title: "Hot key, simulated: release-to-return latency against N (log scales)",
		note: fmt.Sprintf("arrivals over %v, holder works %v; capacity model at 1000 WCU/s, 3000 RCU/s per item; virtual time, round trips 3-8 ms",
			bench.HotArrival, bench.HerdWork),
		target: 1000, targetLabel: "target at N=10,000: p99 1 s",
		xLabel: "N, invocations on one key within 1 s",
	}
	kinds := []struct {
		mode  string
		warm  bool
		color string
	}{
		{"default", false, "#d62728"}, {"default", true, "#ff9896"},
		{"default-reused", false, "#1f77b4"}, {"default-reused", true, "#9467bd"},
	}
	any := false
	for _, k := range kinds {
		temp := "cold"
		if k.warm {
			temp = "warm"
		}
		s := series{name: k.mode + ", " + temp, color: k.color}
		for _, h := range r.Hot {
			if h.Mode == k.mode && (h.WarmHolds > 0) == k.warm && h.ArrivalMs == float64(bench.HotArrival.Milliseconds()) &&
				h.WorkMs == float64(bench.HerdWork.Milliseconds()) && h.Latency.N > 0 {
				s.pts = append(s.pts, point{h.N, h.Latency})
			}
		}
		slices.SortFunc(s.pts, func(a, b point) int { return a.n - b.n })
		if len(s.pts) > 0 {
			any = true
			p.series = append(p.series, s)
		}
	}
	return p, any
}

// drawPanel draws p with its top at y0.
func drawPanel(b *strings.Builder, y0 float64, p panel) {
	var ns []int
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, s := range p.series {
		for _, pt := range s.pts {
			if !slices.Contains(ns, pt.n) {
				ns = append(ns, pt.n)
			}
			lo, hi = min(lo, pt.lat.P50), max(hi, pt.lat.Max)
		}
	}
	if p.target > 0 {
		hi = max(hi, p.target)
	}
	slices.Sort(ns)
	// Time axis: decades covering the data, in ms.
	yMin := math.Pow(10, math.Floor(math.Log10(max(lo, 1))))
	yMax := math.Pow(10, math.Ceil(math.Log10(max(hi, 10))))
	plotW, plotH := float64(width-left-right), float64(panelH-top-bottom)
	x := func(n int) float64 { // N on a log axis
		a, c := math.Log10(float64(ns[0])), math.Log10(float64(ns[len(ns)-1]))
		if a == c {
			return float64(left) + plotW/2
		}
		return float64(left) + 20 + (math.Log10(float64(n))-a)/(c-a)*(plotW-40)
	}
	y := func(v float64) float64 {
		v = max(v, yMin)
		return y0 + float64(top) + plotH - (math.Log10(v)-math.Log10(yMin))/(math.Log10(yMax)-math.Log10(yMin))*plotH
	}
	fmt.Fprintf(b, `<text x="%d" y="%.1f" font-size="15" font-weight="bold">%s</text>`+"\n", left, y0+22, esc(p.title))
	fmt.Fprintf(b, `<text x="%d" y="%.1f" fill="#555">%s</text>`+"\n", left, y0+38, esc(p.note))
	// Grid and axes.
	for d := yMin; d <= yMax*1.0001; d *= 10 {
		for _, m := range []float64{1, 2, 5} {
			v := d * m
			if v > yMax*1.0001 {
				break
			}
			stroke := "#eee"
			if m == 1 {
				stroke = "#ccc"
			}
			fmt.Fprintf(b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="%s"/>`+"\n", left, width-right, y(v), y(v), stroke)
			fmt.Fprintf(b, `<text x="%d" y="%.1f" text-anchor="end" dy="4">%s</text>`+"\n", left-6, y(v), msLabel(v))
		}
	}
	bot := y0 + float64(panelH-bottom)
	for _, n := range ns {
		fmt.Fprintf(b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#ccc"/>`+"\n", x(n), x(n), y0+float64(top), bot)
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle">%d</text>`+"\n", x(n), bot+18, n)
	}
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", float64(left)+plotW/2, bot+40, esc(p.xLabel))
	fmt.Fprintf(b, `<text transform="translate(18 %.1f) rotate(-90)" text-anchor="middle">release to return</text>`+"\n", y0+float64(top)+plotH/2)
	fmt.Fprintf(b, `<rect x="%d" y="%.1f" width="%.0f" height="%.0f" fill="none" stroke="#333"/>`+"\n", left, y0+float64(top), plotW, plotH)
	if p.target > 0 {
		fmt.Fprintf(b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#2ca02c" stroke-dasharray="6 4"/>`+"\n", left, width-right, y(p.target), y(p.target))
	}
	// Series: p99 solid, p50 dashed, max as a tick. A p99 label that would
	// overlap one already drawn at the same N is left out.
	labels := map[int][]float64{}
	for _, s := range p.series {
		for _, q := range []struct {
			dash string
			get  func(bench.Summary) float64
		}{
			{"", func(s bench.Summary) float64 { return s.P99 }},
			{` stroke-dasharray="4 3"`, func(s bench.Summary) float64 { return s.P50 }},
		} {
			var pts []string
			for _, pt := range s.pts {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(pt.n), y(q.get(pt.lat))))
			}
			fmt.Fprintf(b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"%s/>`+"\n", strings.Join(pts, " "), s.color, q.dash)
		}
		for _, pt := range s.pts {
			fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="3.5" fill="%s"/>`+"\n", x(pt.n), y(pt.lat.P99), s.color)
			fmt.Fprintf(b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="%s" stroke-width="2"/>`+"\n", x(pt.n)-6, x(pt.n)+6, y(pt.lat.Max), y(pt.lat.Max), s.color)
			yy := y(pt.lat.P99)
			if slices.ContainsFunc(labels[pt.n], func(v float64) bool { return math.Abs(v-yy) < 13 }) {
				continue
			}
			labels[pt.n] = append(labels[pt.n], yy)
			fmt.Fprintf(b, `<text x="%.1f" y="%.1f" fill="%s" dx="6" dy="-8">%s</text>`+"\n", x(pt.n), yy, s.color, msLabel(pt.lat.P99))
		}
	}
	// Legend.
	lx, ly := width-right+16, y0+float64(top)+10
	legend := func(i int, color, dash, label string) {
		yy := ly + float64(i*20)
		fmt.Fprintf(b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="%s" stroke-width="2"%s/>`+"\n", lx, lx+24, yy, yy, color, dash)
		fmt.Fprintf(b, `<text x="%d" y="%.1f" dy="4">%s</text>`+"\n", lx+30, yy, esc(label))
	}
	i := 0
	for _, s := range p.series {
		legend(i, s.color, "", s.name+" p99")
		legend(i+1, s.color, ` stroke-dasharray="4 3"`, s.name+" p50")
		i += 2
	}
	legend(i, "#333", "", "tick: max")
	if p.target > 0 {
		legend(i+1, "#2ca02c", ` stroke-dasharray="6 4"`, p.targetLabel)
	}
}

func msLabel(v float64) string {
	if v >= 1000 {
		return fmt.Sprintf("%.3g s", v/1000)
	}
	return fmt.Sprintf("%.3g ms", v)
}

func esc(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}
