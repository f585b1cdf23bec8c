package lockmw_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/middleware/lockmw"
)

// Rate is the result of the example's handler.
type Rate struct {
	Pair string
	Bid  float64
}

// ExampleWrap coalesces a plain handler: no cache, no read handler. The
// holder's Rate travels in the lock item; here a second invocation, within
// the fresh-success window, gets it from there without fetching.
func ExampleWrap() {
	store := lockcore.NewMemoryStore() // lockcore.NewDynamoStore in Lambda
	fetches := 0
	fetchRate := func(ctx context.Context, q Quote) (Rate, error) {
		fetches++ // the expensive, rate-limited call
		return Rate{Pair: q.Pair, Bid: 1.0842}, nil
	}
	pair := func(ctx context.Context, q Quote) (string, error) { return q.Pair, nil }

	h := lockmw.Wrap(fetchRate, store, pair,
		lockmw.WithLockOptions(lockcore.WithFreshSuccess(time.Minute)),
		lockmw.WithTelemetry(lockmw.Telemetry{Logger: slog.New(slog.DiscardHandler), EMFWriter: io.Discard}),
	)
	for range 2 {
		rate, err := h(context.Background(), Quote{Pair: "EUR-USD"})
		fmt.Println(rate, err)
	}
	fmt.Println("fetches:", fetches)
	// Output:
	// {EUR-USD 1.0842} <nil>
	// {EUR-USD 1.0842} <nil>
	// fetches: 1
}
