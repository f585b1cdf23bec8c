package idempotency_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/middleware/idempotency"
	"github.com/herdlock/herdlock/middleware/lockmw"
	"github.com/herdlock/herdlock/middleware/sqsmw"
)

// processLog is an SQS record handler that records what it processed and
// fails the bodies it is told to.
type processLog struct {
	mu        sync.Mutex // guards the fields below
	processed []string   // message ids
	fail      map[string]bool
}

func (p *processLog) process(_ context.Context, r events.SQSMessage) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.processed = append(p.processed, r.MessageId)
	if p.fail[r.Body] {
		return errors.New("upstream failed")
	}
	return nil
}

func (p *processLog) ids() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Sorted(slices.Values(p.processed))
}

// delivery is a batch of records (id, body), delivered for the n-th time:
// a redelivery has the ids and bodies, and new receipt handles and receive
// counts.
func delivery(n int, records ...[2]string) events.SQSEvent {
	var ev events.SQSEvent
	for _, r := range records {
		ev.Records = append(ev.Records, events.SQSMessage{
			MessageId: r[0], Body: r[1], ReceiptHandle: fmt.Sprintf("rh-%s-%d", r[0], n),
			Attributes:     map[string]string{"ApproximateReceiveCount": fmt.Sprint(n)},
			EventSourceARN: "arn:aws:sqs:eu-west-1:123456789012:orders", EventSource: "aws:sqs",
		})
	}
	return ev
}

func failedIDs(resp events.SQSEventResponse) []string {
	var ids []string
	for _, f := range resp.BatchItemFailures {
		ids = append(ids, f.ItemIdentifier)
	}
	slices.Sort(ids)
	return ids
}

// Powertools' SQS idempotency with the batch utility: per record, by
// message id or by a key from the body; the partial batch response names
// exactly the failed records, and a redelivered record is not processed
// twice.
func TestSQSPerRecord(t *testing.T) {
	bodyKey := sqsmw.JSONBody(func(b struct{ Order string }) (string, error) { return b.Order, nil })
	tests := []struct {
		name          string
		key           func(context.Context, events.SQSMessage) (string, error)
		first, second events.SQSEvent
		wantFailed    []string // of the first delivery
		wantProcessed []string // over both deliveries
	}{
		{
			name:          "by message id: the redelivery processes only the record that failed",
			key:           idempotency.MessageID,
			first:         delivery(1, [2]string{"m1", `{"Order":"a"}`}, [2]string{"m2", `{"Order":"fail"}`}, [2]string{"m3", `{"Order":"c"}`}),
			second:        delivery(2, [2]string{"m1", `{"Order":"a"}`}, [2]string{"m2", `{"Order":"fail"}`}, [2]string{"m3", `{"Order":"c"}`}),
			wantFailed:    []string{"m2"},
			wantProcessed: []string{"m1", "m2", "m2", "m3"},
		},
		{
			name:          "by a key from the body: a second message of one order is not processed",
			key:           bodyKey,
			first:         delivery(1, [2]string{"m1", `{"Order":"a"}`}),
			second:        delivery(1, [2]string{"m9", `{"Order":"a"}`}),
			wantProcessed: []string{"m1"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				store := lockcore.NewMemoryStore()
				p := &processLog{fail: map[string]bool{`{"Order":"fail"}`: true}}
				lockOpts := []lockmw.Option{lockmw.WithHolder(lockmw.Holder{AccountID: 123456789012, AppID: 1}),
					lockmw.WithTelemetry(lockmw.Telemetry{Logger: slog.New(slog.DiscardHandler)}), lockmw.WithTelemetry(lockmw.Telemetry{EMFWriter: io.Discard})}
				records, err := idempotency.SQSHandler(p.process, store, tt.key, idempotency.WithLockmw(lockOpts...))
				if err != nil {
					t.Fatal(err)
				}
				batch := sqsmw.Wrap(records, store, idempotency.MessageID, sqsmw.WithLockmw(lockOpts...),
					sqsmw.WithMinKeyTime(10*time.Second))
				ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
				defer cancel()
				resp, _ := batch(ctx, tt.first)
				if got := failedIDs(resp); !slices.Equal(got, tt.wantFailed) {
					t.Errorf("first delivery's failures = %v, want %v", got, tt.wantFailed)
				}
				time.Sleep(30 * time.Second) // the visibility timeout; the upstream recovered
				p.mu.Lock()
				p.fail = nil
				p.mu.Unlock()
				resp, _ = batch(ctx, tt.second)
				if got := failedIDs(resp); len(got) != 0 {
					t.Errorf("redelivery's failures = %v, want none", got)
				}
				if got := p.ids(); !slices.Equal(got, tt.wantProcessed) {
					t.Errorf("processed = %v, want %v", got, tt.wantProcessed)
				}
			})
		})
	}
}

// A JSON body is fingerprinted in its canonical form, as WrapHTTP's: a
// second message of one order whose producer wrote the same JSON with
// its keys in another order, or other white space, is a duplicate (not
// processed, not failed), while another JSON value, or the text of a JSON
// string, is another payload: the record fails with ErrPayloadMismatch.
func TestSQSBodyFingerprintIsCanonicalJSON(t *testing.T) {
	bodyKey := sqsmw.JSONBody(func(b struct{ Order string }) (string, error) { return b.Order, nil })
	tests := []struct {
		name       string
		second     string
		wantFailed []string
	}{
		{"the same JSON, keys in another order", `{ "n": 1, "Order": "a" }`, nil},
		{"another JSON value", `{"Order":"a","n":2}`, []string{"m2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				store := lockcore.NewMemoryStore()
				p := &processLog{}
				records, err := idempotency.SQSHandler(p.process, store, bodyKey, quiet())
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
				defer cancel()
				first := delivery(1, [2]string{"m1", `{"Order":"a","n":1}`})
				if err := records(ctx, "a", first.Records); err != nil {
					t.Fatal(err)
				}
				err = records(ctx, "a", delivery(1, [2]string{"m2", tt.second}).Records)
				if (err != nil) != (tt.wantFailed != nil) || (err != nil && !errors.Is(err, idempotency.ErrPayloadMismatch)) {
					t.Errorf("second message = %v, want failed %v", err, tt.wantFailed)
				}
				if got := p.ids(); !slices.Equal(got, []string{"m1"}) {
					t.Errorf("processed = %v, want [m1]", got)
				}
			})
		})
	}
}

// The records sqsmw hands over for one key (a group keyed by a body key,
// a run of a FIFO message group) stop at their first failure: sqsmw fails
// the key's records together, so a later record run after it would call
// the upstream once more for a failing key, and, in a FIFO group, run
// before the redelivery of the message ahead of it.
func TestSQSRecordsStopAtTheFirstFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := lockcore.NewMemoryStore()
		p := &processLog{fail: map[string]bool{`{"Order":"fail"}`: true}}
		lockOpts := []lockmw.Option{lockmw.WithHolder(lockmw.Holder{AccountID: 123456789012, AppID: 1}),
			lockmw.WithTelemetry(lockmw.Telemetry{Logger: slog.New(slog.DiscardHandler)}), lockmw.WithTelemetry(lockmw.Telemetry{EMFWriter: io.Discard})}
		records, err := idempotency.SQSHandler(p.process, store, idempotency.MessageID, idempotency.WithLockmw(lockOpts...))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		ev := delivery(1, [2]string{"m0", `{"Order":"fail"}`}, [2]string{"m1", `{"Order":"b"}`}, [2]string{"m2", `{"Order":"c"}`})
		err = records(ctx, "tenant-1", ev.Records)
		if err == nil {
			t.Error("records() = nil, want the first record's failure")
		}
		if got := p.ids(); !slices.Equal(got, []string{"m0"}) {
			t.Errorf("processed = %v, want only m0: nothing after the first failure", got)
		}
	})
}
