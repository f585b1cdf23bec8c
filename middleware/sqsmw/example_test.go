package sqsmw_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/middleware/lockmw"
	"github.com/herdlock/herdlock/middleware/sqsmw"
)

// A queue of refresh requests: one upstream call per pair and batch, and
// a partial batch response that names the records of the pairs that
// failed.
func ExampleWrap() {
	refreshPair := func(ctx context.Context, pair string, records []events.SQSMessage) error {
		if pair == "USDJPY" {
			return errors.New("upstream unavailable") // these records are retried
		}
		return nil // fetch the pair once for all its records
	}
	h := sqsmw.Wrap(refreshPair, lockcore.NewMemoryStore(), sqsmw.JSONBody(func(r struct{ Pair string }) (string, error) {
		return r.Pair, nil
	}), sqsmw.WithLockmw(lockmw.WithLockGroup("rates"), lockmw.WithHolder(lockmw.Holder{AccountID: 123456789012, AppID: 1}),
		lockmw.WithTelemetry(lockmw.Telemetry{EMFWriter: io.Discard}), lockmw.WithTelemetry(lockmw.Telemetry{Logger: slog.New(slog.DiscardHandler)})))
	// In a Lambda function: lambda.Start(h).

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, _ := h(ctx, events.SQSEvent{Records: []events.SQSMessage{
		{MessageId: "1", Body: `{"pair":"EURUSD"}`},
		{MessageId: "2", Body: `{"pair":"USDJPY"}`},
		{MessageId: "3", Body: `{"pair":"EURUSD"}`},
		{MessageId: "4", Body: `not json`},
	}})
	fmt.Println(resp.BatchItemFailures)
	// Output: [{2} {4}]
}
