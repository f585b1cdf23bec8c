package httpmw_test

import (
	"context"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/lockcore/storeapi"
	"github.com/herdlock/herdlock/middleware/lockmw"
	"github.com/herdlock/herdlock/middleware/sqsmw"
)

// refresher is a queue front on the lock group of the HTTP tests, as an
// SQS refresher of the same cache is: each record's body is the pair.
func refresher(store storeapi.Store, calls *atomic.Int32) func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
	return must(sqsmw.New(func(context.Context, string, []events.SQSMessage) error {
		calls.Add(1)
		return nil
	}, store, func(_ context.Context, r events.SQSMessage) (string, error) { return r.Body, nil },
		sqsmw.WithLockmwOptions(lockmw.WithLockGroup("rates"), lockmw.WithTelemetry(lockmw.Telemetry{Logger: slog.New(slog.DiscardHandler), EMFWriter: io.Discard}))))
}

func refresh(t *testing.T, q func(context.Context, events.SQSEvent) (events.SQSEventResponse, error)) events.SQSEventResponse {
	t.Helper()
	ctx, cancel := invocation(10 * time.Second)
	defer cancel()
	resp, err := q(ctx, events.SQSEvent{Records: []events.SQSMessage{{MessageId: "m1", Body: samplePair,
		EventSource: "aws:sqs", EventSourceARN: "arn:aws:sqs:eu-west-1:123456789012:rates"}}})
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// TestFrontsOnOneLockGroupReadEachOthersSuccess: an HTTP front and a queue
// front on one lock group publish one answer format. A GET that finds the
// refresher's fresh success (the work is done, no HTTP answer came with
// it) runs its own handler and answers 200, never 503; a refresh that
// finds the GET's fresh success is done without running its handler.
func TestFrontsOnOneLockGroupReadEachOthersSuccess(t *testing.T) {
	for _, s := range shapes {
		t.Run(s.name+"/the queue first", func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				store := lockcore.NewMemoryStore()
				var refreshes atomic.Int32
				if resp := refresh(t, refresher(store, &refreshes)); len(resp.BatchItemFailures) != 0 || refreshes.Load() != 1 {
					t.Fatalf("refresh: failures %v, %d handler runs; want none and 1", resp.BatchItemFailures, refreshes.Load())
				}
				c := &counting{h: okHandler}
				g := request(t, s.wrap(c.handle, store, quiet()), sample(t, s, samplePair), 10*time.Second)
				if g.Status != 200 || string(g.Body) != `{"pair":"EURUSD","bid":1.1}` {
					t.Errorf("GET after the refresh: %d %s, want its own 200", g.Status, g.Body)
				}
				wantCalls(t, c.count(), 1)
			})
		})
		t.Run(s.name+"/HTTP first", func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				store := lockcore.NewMemoryStore()
				c := &counting{h: okHandler}
				if g := request(t, s.wrap(c.handle, store, quiet()), sample(t, s, samplePair), 10*time.Second); g.Status != 200 {
					t.Fatalf("GET: %d, want 200", g.Status)
				}
				var refreshes atomic.Int32
				if resp := refresh(t, refresher(store, &refreshes)); len(resp.BatchItemFailures) != 0 || refreshes.Load() != 0 {
					t.Errorf("refresh after the GET: failures %v, %d handler runs; want none and 0", resp.BatchItemFailures, refreshes.Load())
				}
			})
		})
	}
}
