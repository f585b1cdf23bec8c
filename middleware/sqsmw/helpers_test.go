package sqsmw_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/lockcore/storeapi"
	"github.com/herdlock/herdlock/middleware/lockmw"
	"github.com/herdlock/herdlock/middleware/sqsmw"
)

const testARN = "arn:aws:lambda:eu-west-1:123456789012:function:rates-refresh"

// refresh is a record body.
type refresh struct {
	Pair string `json:"pair"`
}

func pairOf(r refresh) (string, error) {
	if r.Pair == "" {
		return "", fmt.Errorf("%w: no pair", lockmw.ErrKey)
	}
	return r.Pair, nil
}

var bodyKey = sqsmw.JSONBody(pairOf)

// loadEvent reads a sample event.
func loadEvent(t testing.TB, name string) events.SQSEvent {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	var ev events.SQSEvent
	if err := json.Unmarshal(raw, &ev); err != nil {
		t.Fatal(err)
	}
	return ev
}

// batchOf builds a standard-queue batch from the sample's first record,
// one record per pair, with ids m0, m1, ...
func batchOf(t testing.TB, pairs ...string) events.SQSEvent {
	tmpl := loadEvent(t, "sqs-standard-batch.json").Records[0]
	var ev events.SQSEvent
	for i, p := range pairs {
		r := tmpl
		r.MessageId = fmt.Sprintf("m%d", i)
		body, _ := json.Marshal(refresh{Pair: p})
		r.Body = string(body)
		ev.Records = append(ev.Records, r)
	}
	return ev
}

// fifoOf makes ev a FIFO batch, the groups given per record.
func fifoOf(ev events.SQSEvent, groups ...string) events.SQSEvent {
	for i := range ev.Records {
		r := &ev.Records[i]
		r.EventSourceARN += ".fifo"
		r.Attributes = map[string]string{"MessageGroupId": groups[i], "SequenceNumber": fmt.Sprint(1000 + i)}
	}
	return ev
}

func invocation(timeout time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	return lambdacontext.NewContext(ctx, &lambdacontext.LambdaContext{AwsRequestID: "req", InvokedFunctionArn: testARN}), cancel
}

func quiet(lockOpts ...lockcore.Option) sqsmw.Option {
	return sqsmw.WithLockmwOptions(lockmw.WithLockGroup("rates"), lockmw.WithTelemetry(lockmw.Telemetry{Logger: slog.New(slog.DiscardHandler), EMFWriter: io.Discard}),
		lockmw.WithLockOptions(lockOpts...))
}

// recorder is a handler that records its calls and fails the keys in fail.
type recorder struct {
	mu    sync.Mutex
	calls []call
	fail  map[string]error
	block map[string]chan struct{} // keys whose call waits for the channel
}

type call struct {
	key      string
	ids      []string
	deadline time.Duration // time left on the call's context when it began
}

func (r *recorder) handle(ctx context.Context, key string, records []events.SQSMessage) error {
	var ids []string
	for _, rec := range records {
		ids = append(ids, rec.MessageId)
	}
	dl, _ := ctx.Deadline()
	r.mu.Lock()
	r.calls = append(r.calls, call{key: key, ids: ids, deadline: time.Until(dl)})
	ch := r.block[key]
	err := r.fail[key]
	r.mu.Unlock()
	if ch != nil {
		<-ch
	}
	return err
}

func (r *recorder) keys() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var ks []string
	for _, c := range r.calls {
		ks = append(ks, c.key)
	}
	return ks
}

func (r *recorder) snapshot() []call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}

// failedIDs lists the ids a response names.
func failedIDs(resp events.SQSEventResponse) []string {
	ids := []string{}
	for _, f := range resp.BatchItemFailures {
		ids = append(ids, f.ItemIdentifier)
	}
	return ids
}

// keyRecorder is a store that records the lock ids it is asked for.
type keyRecorder struct {
	storeapi.Store
	mu  sync.Mutex
	ids []string
}

func newKeyRecorder() *keyRecorder { return &keyRecorder{Store: lockcore.NewMemoryStore()} }

func (s *keyRecorder) Acquire(ctx context.Context, req storeapi.AcquireRequest) (storeapi.Item, error) {
	s.mu.Lock()
	s.ids = append(s.ids, req.Key.ID)
	s.mu.Unlock()
	return s.Store.Acquire(ctx, req)
}

func (s *keyRecorder) asked() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.ids)
}

// must is the handler of New, which the test's configuration never
// fails.
func must[F any](f F, err error) F {
	if err != nil {
		panic(err)
	}
	return f
}
