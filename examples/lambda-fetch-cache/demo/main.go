// Command demo runs one burst of concurrent invocations of the example
// function on real local pieces and prints what happened: it builds the
// bootstrap, starts Dynoxide, a rate-limited upstream with the given latency
// and N Lambda Runtime Interface Emulator sandboxes, fires one invocation per
// sandbox on the same key at once, prints a row per invocation, the upstream
// and DynamoDB request counts and a timeline of who held the lock and who
// waited, then stops everything it started.
//
//	go run ./examples/lambda-fetch-cache/demo -n 10 -upstream-latency 300ms
//
// With -answer-mode inline the function runs without its cache table: the
// holder's answer travels in the lock item, and every row shows that one
// answer.
//
// With -front http (make demo FRONT=http) the burst goes through the HTTP
// API front door instead: N requests GET /rates/{pair} in API Gateway's
// payload 2.0, answered by httpmw.NewHTTPAPI; each row shows the HTTP
// status, Cache-Control or Retry-After, and the body's size. Add
// -throttle 8s to have the upstream answer 429 with Retry-After: 8 for its
// first 8 s, and see every client get 429 with a Retry-After.
//
// With -front http -idempotent (make demo FRONT=http IDEMPOTENT=1) the
// burst is N duplicates of one order: POST /orders with the same
// Idempotency-Key and body, answered by idempotency.WrapHTTP; each row
// shows the status, whether the answer is a replay (Idempotent-Replayed)
// and the order it names, and the upstream's count of orders created (one).
//
// It needs `make deps` (Dynoxide and the emulator); `make demo`
// does both.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/herdlock/herdlock/examples/lambda-fetch-cache/fetchcache"
	"github.com/herdlock/herdlock/examples/lambda-fetch-cache/internal/localrun"
	"github.com/herdlock/herdlock/internal/dynoxide"
	"github.com/herdlock/herdlock/internal/sandbox"
)

func main() {
	n := flag.Int("n", 10, "concurrent invocations, one sandbox each")
	latency := flag.Duration("upstream-latency", 300*time.Millisecond, "how long the upstream takes to answer")
	pair := flag.String("pair", "EUR-USD", "the item every invocation asks for")
	verbose := flag.Bool("v", false, "print the sandboxes' output")
	mode := flag.String("answer-mode", fetchcache.AnswerCache, "the function's ANSWER_MODE: cache or inline")
	front := flag.String("front", "direct", "the front door: direct (bare events) or http (the HTTP API route)")
	throttle := flag.Duration("throttle", 0, "the upstream answers 429 with this Retry-After for this long after the first request")
	idempotent := flag.Bool("idempotent", false, "with -front http: N duplicates of POST /orders with one Idempotency-Key")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Stdout, demo{n: *n, latency: *latency, pair: *pair, mode: *mode, front: *front, throttle: *throttle, idempotent: *idempotent, verbose: *verbose}); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

// demo is what to run.
type demo struct {
	n        int
	latency  time.Duration
	pair     string
	mode     string
	front    string
	throttle time.Duration
	// idempotent sends the HTTP burst as duplicates of one order.
	idempotent bool
	verbose    bool
}

func run(ctx context.Context, out io.Writer, d demo) error {
	n, latency, pair, mode, verbose := d.n, d.latency, d.pair, d.mode, d.verbose
	if d.front != "direct" && d.front != "http" {
		return fmt.Errorf("-front %q: want direct or http", d.front)
	}
	if d.idempotent && d.front != "http" {
		return fmt.Errorf("-idempotent: needs -front http (the POST /orders route)")
	}
	if n < 1 || n > 200 {
		return fmt.Errorf("-n %d: want 1 to 200", n)
	}
	if mode != fetchcache.AnswerCache && mode != fetchcache.AnswerInline {
		return fmt.Errorf("-answer-mode %q: want %s or %s", mode, fetchcache.AnswerCache, fetchcache.AnswerInline)
	}
	began := time.Now()

	rie, err := sandbox.RIEPath()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "herdlock-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	// The build has no time limit of its own: from empty caches it
	// compiles the AWS SDK, which takes a minute or more on two cores.
	fmt.Fprintf(out, "building bootstrap (provided.al2023, -tags lambda.norpc, CGO_ENABLED=0, no tracing SDK)...\n")
	boot, err := sandbox.BuildBootstrapProgress(ctx, out, localrun.Package, dir, "")
	if err != nil {
		return err
	}
	// Everything after the build is bounded: the servers, the sandboxes
	// and the burst.
	ctx, cancel := context.WithTimeout(ctx, 55*time.Second)
	defer cancel()
	db, err := dynoxide.Start(ctx)
	if err != nil {
		return err
	}
	defer db.Close()
	var sandboxOut io.Writer
	if verbose {
		sandboxOut = out
	}
	fmt.Fprintf(out, "starting Dynoxide, the upstream (latency %v, 5 requests/s) and %d emulator sandboxes...\n", latency, n)
	r, err := localrun.Start(ctx, localrun.Options{
		DynamoEndpoint: db.Endpoint(), RIE: rie, Bootstrap: boot, N: n,
		Upstream: sandbox.UpstreamConfig{Latency: latency, Limit: 5, Window: time.Second,
			ThrottleFirst: d.throttle, RetryAfter: d.throttle},
		Output:     sandboxOut,
		AnswerMode: mode,
	})
	if err != nil {
		return err
	}
	defer r.Close()
	r.Dynamo.Reset() // count the burst only, not the table set-up

	if d.idempotent {
		return runOrders(ctx, out, r, n, pair, began)
	}
	if d.front == "http" {
		return runHTTP(ctx, out, r, n, pair, began)
	}
	fmt.Fprintf(out, "firing %d concurrent invocations of {\"pair\":%q}...\n\n", n, pair)
	invs := r.Pool.Burst(ctx, localrun.Payloads(localrun.Repeat(pair, n)...))

	rows := make([]row, len(invs))
	var failed []error
	for i, inv := range invs {
		resp, err := localrun.Decode(inv)
		rows[i] = row{inv: inv, resp: resp, err: err}
		if err != nil {
			failed = append(failed, err)
		}
	}
	printTable(out, rows)
	fmt.Fprintf(out, "\nupstream requests: %d (429 answers: %d)\n", r.Upstream.Requests(), r.Upstream.Rejected())
	counts := r.Dynamo.Counts()
	ops := make([]string, 0, len(counts))
	for op, c := range counts {
		ops = append(ops, fmt.Sprintf("%s %d", op, c))
	}
	slices.Sort(ops)
	fmt.Fprintf(out, "DynamoDB requests: %d (%s)\n\n", r.Dynamo.Total(), strings.Join(ops, ", "))
	if mode == fetchcache.AnswerInline {
		fmt.Fprintf(out, "answer mode inline: every row is the holder's answer, taken from the lock item\n\n")
	}
	printTimeline(out, rows)
	fmt.Fprintf(out, "\ndone in %v; everything started has been stopped.\n", time.Since(began).Round(100*time.Millisecond))
	return errors.Join(failed...)
}

type row struct {
	inv  sandbox.Invocation
	resp fetchcache.Response
	err  error
}

func printTable(out io.Writer, rows []row) {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "sandbox\toutcome\tsource\tfence\ttook over\twaited\tpolls\tlatency\t")
	for _, r := range rows {
		if r.err != nil {
			fmt.Fprintf(tw, "%d\tERROR\t-\t-\t-\t-\t-\t%v\t  %v\n", r.inv.Sandbox, ms(r.inv.Latency()), r.err)
			continue
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%t\t%v\t%d\t%v\t\n", r.inv.Sandbox, r.resp.Outcome, r.resp.Source,
			r.resp.Fence, r.resp.TookOver, ms(time.Duration(r.resp.WaitedMs)*time.Millisecond), r.resp.Polls, ms(r.inv.Latency()))
	}
	tw.Flush()
}

// printTimeline draws one line per invocation over the burst's time span:
// the holder fetching, the waiters waiting, then reading the cache.
func printTimeline(out io.Writer, rows []row) {
	const width = 60
	if len(rows) == 0 {
		return
	}
	start, end := rows[0].inv.Start, rows[0].inv.End
	for _, r := range rows {
		start = minTime(start, r.inv.Start)
		if r.inv.End.After(end) {
			end = r.inv.End
		}
	}
	span := max(end.Sub(start), time.Millisecond)
	col := func(t time.Time) int { return min(width, int(float64(t.Sub(start))/float64(span)*width)) }
	fmt.Fprintf(out, "timeline, 0 to %v  (█ holder: start-up, lock, upstream fetch, cache write  · start-up  ░ waits for the lock  ▒ reads the cache)\n", ms(span))
	for _, r := range rows {
		line := []rune(strings.Repeat(" ", width))
		fill := func(from, to int, c rune) {
			for i := max(from, 0); i < min(to, width); i++ {
				line[i] = c
			}
		}
		s, e := col(r.inv.Start), max(col(r.inv.End), col(r.inv.Start)+1)
		switch {
		case r.err != nil:
			fill(s, e, 'x')
		case r.resp.Outcome == "ACQUIRED":
			fill(s, e, '█')
		case r.resp.Outcome == "RELEASED":
			w := col(r.inv.End.Add(-time.Duration(r.resp.WaitedMs) * time.Millisecond))
			fill(s, w, '·')
			fill(w, e, '░')
			fill(e-1, e, '▒')
		default:
			fill(s, e-1, '·')
			fill(e-1, e, '▒')
		}
		label := r.resp.Outcome
		if r.err != nil {
			label = "ERROR"
		}
		if r.resp.TookOver {
			label += " (take-over)"
		}
		fmt.Fprintf(out, "  %3d |%s| %s\n", r.inv.Sandbox, string(line), label)
	}
}

func ms(d time.Duration) time.Duration { return d.Round(time.Millisecond) }

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}
