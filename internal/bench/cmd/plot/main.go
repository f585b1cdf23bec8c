// Command plot draws the herd figure of a cmd/bench run as an SVG: the
// waiters' release-to-return latency (p50 and p99, max as a tick) against
// the herd size N, for herdlock and the baseline, on a logarithmic time
// axis.
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

// series is one side's herds, by N.
type series struct {
	name  string
	color string
	herds []bench.HerdResult
}

const (
	width, height = 720, 420
	left, right   = 70, 200
	top, bottom   = 50, 60
)

func render(r *bench.Results) (string, error) {
	ss := []series{
		{name: bench.SideHerdlock, color: "#1f77b4"},
		{name: bench.SideBaseline, color: "#d62728"},
	}
	var ns []int
	lo, hi := math.Inf(1), math.Inf(-1)
	for i := range ss {
		for _, h := range r.Herds {
			if h.Side != ss[i].name || h.Latency.N == 0 {
				continue
			}
			ss[i].herds = append(ss[i].herds, h)
			if !slices.Contains(ns, h.N) {
				ns = append(ns, h.N)
			}
			lo, hi = min(lo, h.Latency.P50), max(hi, h.Latency.Max)
		}
	}
	if len(ns) == 0 {
		return "", fmt.Errorf("no herd latencies in the results")
	}
	slices.Sort(ns)
	// Time axis: decades covering the data, in ms.
	yMin := math.Pow(10, math.Floor(math.Log10(max(lo, 1))))
	yMax := math.Pow(10, math.Ceil(math.Log10(max(hi, 10))))
	plotW, plotH := float64(width-left-right), float64(height-top-bottom)
	x := func(n int) float64 { // N on a log axis
		a, b := math.Log10(float64(ns[0])), math.Log10(float64(ns[len(ns)-1]))
		if a == b {
			return float64(left) + plotW/2
		}
		return float64(left) + 20 + (math.Log10(float64(n))-a)/(b-a)*(plotW-40)
	}
	y := func(v float64) float64 {
		v = max(v, yMin)
		return float64(top) + plotH - (math.Log10(v)-math.Log10(yMin))/(math.Log10(yMax)-math.Log10(yMin))*plotH
	}

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", width, height)
	fmt.Fprintf(&b, `<text x="%d" y="22" font-size="15" font-weight="bold">Herd: waiters' release-to-return latency against N (log scales)</text>`+"\n", left)
	fmt.Fprintf(&b, `<text x="%d" y="38" fill="#555">holder works %.0f ms; herdlock polls every %.0f ms, read cap %.0f/s; baseline every %.0f ms; %s, %d x %s</text>`+"\n",
		left, r.Settings.HerdWorkMs, r.Settings.PollMs, r.Settings.MaxReadRate, r.Settings.BaselinePollMs, esc(r.Settings.Server), r.Machine.NumCPU, esc(r.Machine.CPUModel))
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
			fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="%s"/>`+"\n", left, width-right, y(v), y(v), stroke)
			fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end" dy="4">%s</text>`+"\n", left-6, y(v), msLabel(v))
		}
	}
	for _, n := range ns {
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="#ccc"/>`+"\n", x(n), x(n), top, height-bottom)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%d</text>`+"\n", x(n), height-bottom+18, n)
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">N, concurrent invocations on one key</text>`+"\n", float64(left)+plotW/2, height-bottom+40)
	fmt.Fprintf(&b, `<text transform="translate(18 %.1f) rotate(-90)" text-anchor="middle">release to return</text>`+"\n", float64(top)+plotH/2)
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.0f" height="%.0f" fill="none" stroke="#333"/>`+"\n", left, top, plotW, plotH)
	// Target: one poll interval plus two requests.
	if t := r.HerdP99Target(); t > 0 {
		fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#2ca02c" stroke-dasharray="6 4"/>`+"\n", left, width-right, y(t), y(t))
	}

	// Series: p99 solid, p50 dashed, max as a tick.
	for _, s := range ss {
		for _, q := range []struct {
			dash string
			get  func(bench.Summary) float64
		}{
			{"", func(s bench.Summary) float64 { return s.P99 }},
			{` stroke-dasharray="4 3"`, func(s bench.Summary) float64 { return s.P50 }},
		} {
			var pts []string
			for _, h := range s.herds {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(h.N), y(q.get(h.Latency))))
			}
			fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"%s/>`+"\n", strings.Join(pts, " "), s.color, q.dash)
		}
		for _, h := range s.herds {
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3.5" fill="%s"/>`+"\n", x(h.N), y(h.Latency.P99), s.color)
			fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="%s" stroke-width="2"/>`+"\n", x(h.N)-6, x(h.N)+6, y(h.Latency.Max), y(h.Latency.Max), s.color)
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" fill="%s" dx="6" dy="-8">%s</text>`+"\n", x(h.N), y(h.Latency.P99), s.color, msLabel(h.Latency.P99))
		}
	}
	// Legend.
	lx, ly := width-right+16, top+10
	legend := func(i int, color, dash, label string) {
		yy := ly + i*20
		fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="%s" stroke-width="2"%s/>`+"\n", lx, lx+24, yy, yy, color, dash)
		fmt.Fprintf(&b, `<text x="%d" y="%d" dy="4">%s</text>`+"\n", lx+30, yy, esc(label))
	}
	i := 0
	for _, s := range ss {
		legend(i, s.color, "", s.name+" p99")
		legend(i+1, s.color, ` stroke-dasharray="4 3"`, s.name+" p50")
		i += 2
	}
	legend(i, "#333", "", "tick: max")
	legend(i+1, "#2ca02c", ` stroke-dasharray="6 4"`, "target: poll + 2 requests")
	b.WriteString("</svg>\n")
	return b.String(), nil
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
