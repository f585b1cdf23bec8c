package idempotency_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/middleware/idempotency"
	"github.com/herdlock/herdlock/middleware/lockmw"
)

type Payment struct {
	OrderID string
	Amount  int
}

type Receipt struct {
	Charged  int
	Replayed bool
}

// A payment charged once per order id: the duplicate gets the first
// receipt, marked as a replay by the hook; the order id reused with
// another amount is refused.
func Example() {
	charges := 0
	charge := idempotency.Wrap(idempotency.Handlers[Payment, Receipt]{
		Handle: func(ctx context.Context, p Payment) (Receipt, error) {
			charges++ // the side effect; a real one sends idempotency.FromContext(ctx).Fence with its write
			return Receipt{Charged: p.Amount}, nil
		},
		Key:     func(_ context.Context, p Payment) (string, error) { return p.OrderID, nil },
		Payload: func(p Payment) any { return p.Amount },
		OnReplay: func(_ context.Context, _ Payment, r Receipt) (Receipt, error) {
			r.Replayed = true
			return r, nil
		},
	}, lockcore.NewMemoryStore(), // a lockcore.DynamoStore in Lambda
		idempotency.WithKeyPrefix("charge"),
		idempotency.WithLockmw(lockmw.WithHolder(lockmw.Holder{AccountID: 123456789012, AppID: 1}),
			lockmw.WithTelemetry(lockmw.Telemetry{Logger: slog.New(slog.DiscardHandler)}), lockmw.WithTelemetry(lockmw.Telemetry{EMFWriter: io.Discard})))

	ctx := context.Background()
	first, _ := charge(ctx, Payment{OrderID: "o-1", Amount: 42})
	again, _ := charge(ctx, Payment{OrderID: "o-1", Amount: 42})
	_, err := charge(ctx, Payment{OrderID: "o-1", Amount: 43})
	fmt.Printf("first %+v\nagain %+v\ncharges %d\n", first, again, charges)
	fmt.Println(errors.Is(err, idempotency.ErrPayloadMismatch))
	// Output:
	// first {Charged:42 Replayed:false}
	// again {Charged:42 Replayed:true}
	// charges 1
	// true
}
