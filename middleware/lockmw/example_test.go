package lockmw_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/herdlock/herdlock/emf"
	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/middleware/lockmw"
)

// Quote is the event of the example: which currency pair to fetch.
type Quote struct{ Pair string }

func Example() {
	store := lockcore.NewMemoryStore() // lockcore.NewDynamoStore in Lambda
	cached := map[string]string{}

	// fetch runs in the one invocation that holds the lock.
	fetch := func(ctx context.Context, q Quote) (string, error) {
		info, _ := lockmw.FromContext(ctx)
		rate := "1.0842"      // the expensive, rate-limited call
		cached[q.Pair] = rate // a real cache write is conditioned on info.Fence
		fmt.Println(info.Outcome, "took over:", info.TookOver)
		return rate, nil
	}
	// read runs in the invocations that waited for a published result.
	read := func(ctx context.Context, q Quote) (string, error) {
		if rate, ok := cached[q.Pair]; ok {
			return rate, nil
		}
		return "", errors.New("not cached")
	}

	key := func(ctx context.Context, q Quote) (string, error) { return q.Pair, nil }
	h := lockmw.WrapHandlers(lockmw.Handlers[Quote, string]{
		Fetch:      fetch,
		OnReleased: read,
		ResultRef:  func(rate string) string { return "rates/EUR-USD" },
	}, store, key,
		// Default: JSON logs on stderr, EMF on stdout; the record account
		// from the function ARN (account 1 outside Lambda).
		lockmw.WithTelemetry(lockmw.Telemetry{Logger: slog.New(slog.DiscardHandler), EMFWriter: io.Discard}),
	)
	// lambda.Start(h) in a Lambda; here one invocation:
	rate, err := h(context.Background(), Quote{Pair: "EUR-USD"})
	fmt.Println(rate, err)
	// Output:
	// ACQUIRED took over: false
	// 1.0842 <nil>
}

// A handler's own metrics and log lines join its invocation's: the metric
// goes out in the invocation's one EMF document, with the lock metrics and
// the request id, and the log line carries the request id and lock key,
// however many invocations run at once in the process.
func ExampleMetrics() {
	fetch := func(ctx context.Context, q Quote) (string, error) {
		lockmw.Metrics(ctx).Add("UpstreamCalls", emf.Count, 1)
		lockmw.Logger(ctx).InfoContext(ctx, "fetching", slog.String("pair", q.Pair))
		return "1.0842", nil
	}
	key := func(ctx context.Context, q Quote) (string, error) { return q.Pair, nil }
	h := lockmw.Wrap(fetch, lockcore.NewMemoryStore(), key,
		lockmw.WithTelemetry(lockmw.Telemetry{Logger: slog.New(slog.DiscardHandler), EMFWriter: io.Discard}))
	rate, err := h(context.Background(), Quote{Pair: "EUR-USD"})
	fmt.Println(rate, err)
	// Output:
	// 1.0842 <nil>
}
