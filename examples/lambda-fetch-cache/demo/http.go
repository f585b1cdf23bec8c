package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/herdlock/herdlock/examples/lambda-fetch-cache/internal/localrun"
)

// runHTTP fires n HTTP API requests GET /rates/{pair} at once and prints
// what each client got.
func runHTTP(ctx context.Context, out io.Writer, r *localrun.Run, n int, pair string, began time.Time) error {
	fmt.Fprintf(out, "firing %d concurrent HTTP API requests GET /rates/%s (payload 2.0)...\n\n", n, pair)
	invs := r.Pool.Burst(ctx, localrun.HTTPAPIEvents(pair, n))
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "sandbox\tstatus\tContent-Type\tCache-Control\tRetry-After\tbody\tlatency\t")
	var failed []error
	bodies := map[string]int{}
	for _, inv := range invs {
		var resp events.APIGatewayV2HTTPResponse
		if inv.Err != nil || inv.FunctionError || json.Unmarshal(inv.Body, &resp) != nil {
			err := fmt.Errorf("sandbox %d: %v %s", inv.Sandbox, inv.Err, inv.Body)
			failed = append(failed, err)
			fmt.Fprintf(tw, "%d\tERROR\t-\t-\t-\t-\t%v\t  %v\n", inv.Sandbox, ms(inv.Latency()), err)
			continue
		}
		bodies[resp.Body]++
		body := fmt.Sprintf("%d bytes", len(resp.Body))
		if resp.StatusCode >= 400 {
			body = resp.Body
		}
		fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%s\t%s\t%v\t\n", inv.Sandbox, resp.StatusCode, resp.Headers["Content-Type"],
			dash(resp.Headers["Cache-Control"]), dash(resp.Headers["Retry-After"]), body, ms(inv.Latency()))
	}
	tw.Flush()
	fmt.Fprintf(out, "\nupstream requests: %d (refused: %d); distinct bodies among %d answers: %d\n",
		r.Upstream.Requests(), r.Upstream.Rejected(), len(invs), len(bodies))
	fmt.Fprintf(out, "DynamoDB requests: %d\n", r.Dynamo.Total())
	fmt.Fprintf(out, "\ndone in %v; everything started has been stopped.\n", time.Since(began).Round(100*time.Millisecond))
	return errors.Join(failed...)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// runOrders fires n HTTP API requests POST /orders at once, all with one
// Idempotency-Key and body, and prints what each client got and how many
// orders the upstream created.
func runOrders(ctx context.Context, out io.Writer, r *localrun.Run, n int, pair string, began time.Time) error {
	key := fmt.Sprintf("demo-%d", began.UnixNano())
	body := fmt.Sprintf(`{"pair":%q,"amount":1}`, pair)
	fmt.Fprintf(out, "firing %d concurrent HTTP API requests POST /orders, Idempotency-Key: %s, body %s...\n\n", n, key, body)
	invs := r.Pool.Burst(ctx, localrun.OrderEvents(key, body, n))
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "sandbox\tstatus\treplayed\torder\tlatency\t")
	var failed []error
	bodies := map[string]int{}
	for _, inv := range invs {
		var resp events.APIGatewayV2HTTPResponse
		if inv.Err != nil || inv.FunctionError || json.Unmarshal(inv.Body, &resp) != nil {
			err := fmt.Errorf("sandbox %d: %v %s", inv.Sandbox, inv.Err, inv.Body)
			failed = append(failed, err)
			fmt.Fprintf(tw, "%d\tERROR\t-\t-\t%v\t  %v\n", inv.Sandbox, ms(inv.Latency()), err)
			continue
		}
		bodies[resp.Body]++
		var o struct {
			ID string `json:"orderId"`
		}
		what := resp.Body
		if json.Unmarshal([]byte(resp.Body), &o) == nil && o.ID != "" {
			what = o.ID
		}
		fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%v\t\n", inv.Sandbox, resp.StatusCode, dash(resp.Headers["Idempotent-Replayed"]), what, ms(inv.Latency()))
	}
	tw.Flush()
	fmt.Fprintf(out, "\norders the upstream created: %d; distinct bodies among %d answers: %d\n", len(r.Upstream.Orders()), len(invs), len(bodies))
	fmt.Fprintf(out, "DynamoDB requests: %d\n", r.Dynamo.Total())
	fmt.Fprintf(out, "\ndone in %v; everything started has been stopped.\n", time.Since(began).Round(100*time.Millisecond))
	return errors.Join(failed...)
}
