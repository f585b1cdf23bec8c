package sqsmw_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/middleware/sqsmw"
)

// The documents the conformance rows cite.
const (
	docPartialBatch = "AWS Lambda Developer Guide, Handling errors for an SQS event source in Lambda, " +
		"Implementing partial batch responses (lambda/latest/dg/services-sqs-errorhandling.html#services-sqs-batchfailurereporting)"
	docFIFOLogic = "Amazon SQS Developer Guide, FIFO queue delivery logic: messages of a group are received and processed " +
		"strictly in order (AWSSimpleQueueService/latest/SQSDeveloperGuide/FIFO-queues-understanding-logic.html)"
	docFIFOName = "Amazon SQS Developer Guide, FIFO queues: the name of a FIFO queue must end with the .fifo suffix " +
		"(AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-fifo-queues.html)"
	docFairQueues = "Amazon SQS Developer Guide, Amazon SQS fair queues: on a standard queue the MessageGroupId names the tenant, " +
		"and standard queues keep no order (AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-fair-queues.html)"
	docGoContext = "AWS Lambda Developer Guide, Using the Lambda context object to retrieve Go function information: " +
		"ctx.Deadline() is when the invocation times out, and a timed-out invocation fails the whole batch " +
		"(lambda/latest/dg/golang-context.html)"
)

// behaviour is what a row's handler does.
type behaviour struct {
	work     time.Duration
	stubborn bool // the work ignores the context's end
	fail     []string
	panics   []string
}

// conformer is the rows' handler: every key's call takes work (or until
// its context ends), fails for the keys in fail, panics for the keys in
// panics, and is recorded with the order of its start and end.
type conformer struct {
	behaviour

	mu    sync.Mutex
	seq   int
	calls []confCall
}

type confCall struct {
	key        string
	ids        []string
	begin, end int // sequence numbers of the call's start and end
	ok         bool
}

func (c *conformer) handle(ctx context.Context, key string, records []events.SQSMessage) error {
	var ids []string
	for _, r := range records {
		ids = append(ids, r.MessageId)
	}
	c.mu.Lock()
	c.seq++
	i := len(c.calls)
	c.calls = append(c.calls, confCall{key: key, ids: ids, begin: c.seq})
	c.mu.Unlock()
	var err error
	if c.stubborn {
		time.Sleep(c.work)
		err = ctx.Err()
	} else {
		select {
		case <-time.After(c.work):
		case <-ctx.Done():
			err = context.Cause(ctx)
		}
	}
	if slices.Contains(c.fail, key) {
		err = errUpstream
	}
	c.mu.Lock()
	c.seq++
	c.calls[i].end, c.calls[i].ok = c.seq, err == nil
	c.mu.Unlock()
	if slices.Contains(c.panics, key) {
		panic("test: handler bug")
	}
	return err
}

// checkGroupOrder judges the calls against FIFO delivery: a record of a
// FIFO queue's group is handed over only after every earlier record of
// its group, in an earlier call that succeeded or earlier in the same
// call.
func checkGroupOrder(t *testing.T, ev events.SQSEvent, calls []confCall) {
	t.Helper()
	pos := map[string]int{}
	for i, r := range ev.Records {
		pos[r.MessageId] = i
	}
	doneBy := map[string]int{} // message id -> end of the successful call that handed it over
	for _, c := range calls {
		if c.ok {
			for _, id := range c.ids {
				doneBy[id] = c.end
			}
		}
	}
	for _, c := range calls {
		for k, id := range c.ids {
			r := ev.Records[pos[id]]
			if !strings.HasSuffix(r.EventSourceARN, ".fifo") {
				continue
			}
			for _, p := range ev.Records[:pos[id]] {
				if p.EventSourceARN != r.EventSourceARN || p.Attributes["MessageGroupId"] != r.Attributes["MessageGroupId"] {
					continue
				}
				if slices.Contains(c.ids[:k], p.MessageId) {
					continue
				}
				if end, ok := doneBy[p.MessageId]; !ok || end > c.begin {
					t.Errorf("call %s %q handed over %s before %s, earlier in its group, was done", c.key, c.ids, id, p.MessageId)
				}
			}
		}
	}
}

// checkIdentifiers judges the response as Lambda reads it: every
// itemIdentifier is a non-empty messageId of the batch, named once.
func checkIdentifiers(t *testing.T, ev events.SQSEvent, resp events.SQSEventResponse) {
	t.Helper()
	ids := map[string]bool{}
	for _, r := range ev.Records {
		ids[r.MessageId] = true
	}
	seen := map[string]bool{}
	for _, f := range resp.BatchItemFailures {
		if f.ItemIdentifier == "" || !ids[f.ItemIdentifier] || seen[f.ItemIdentifier] {
			t.Errorf("itemIdentifier %q: empty, unknown or repeated, which fails the whole batch", f.ItemIdentifier)
		}
		seen[f.ItemIdentifier] = true
	}
}

func TestConformance(t *testing.T) {
	twice := batchOf(t, "A", "B")
	twice.Records = append(twice.Records, twice.Records[1]) // SQS delivers a message twice in one batch
	malformed := batchOf(t, "A", "B")
	malformed.Records[0].Body = "not json"
	fifoMalformed := fifoOf(batchOf(t, "A", "B", "C"), "g", "g", "h")
	fifoMalformed.Records[0].Body = "not json"

	tests := []struct {
		doc     string
		name    string
		event   events.SQSEvent
		conf    behaviour
		opts    []sqsmw.Option
		timeout time.Duration
		want    string // the response as JSON
	}{
		{doc: docPartialBatch, name: "a failed record is named by its messageId as itemIdentifier",
			event: batchOf(t, "A", "B", "A"), conf: behaviour{fail: []string{"B"}}, timeout: 30 * time.Second,
			want: `{"batchItemFailures":[{"itemIdentifier":"m1"}]}`},
		{doc: docPartialBatch, name: "an empty batchItemFailures list: every record succeeded",
			event: batchOf(t, "A", "B", "A"), timeout: 30 * time.Second,
			want: `{"batchItemFailures":[]}`},
		{doc: docPartialBatch, name: "an unknown or repeated itemIdentifier fails the whole batch: a message delivered twice is named once",
			event: twice, conf: behaviour{fail: []string{"B"}}, timeout: 30 * time.Second,
			want: `{"batchItemFailures":[{"itemIdentifier":"m1"}]}`},
		{doc: docPartialBatch, name: "a record that cannot be processed is reported, not dropped",
			event: malformed, timeout: 30 * time.Second,
			want: `{"batchItemFailures":[{"itemIdentifier":"m0"}]}`},
		{doc: docPartialBatch, name: "an exception fails the whole batch: a panicking key fails only its records",
			event: batchOf(t, "A", "B", "C"), conf: behaviour{panics: []string{"B"}}, timeout: 30 * time.Second,
			want: `{"batchItemFailures":[{"itemIdentifier":"m1"}]}`},
		{doc: docPartialBatch, name: "FIFO: stop at a group's first failure and report it and every later message of the group",
			event: fifoOf(batchOf(t, "A", "B", "C", "D"), "g", "g", "g", "h"), conf: behaviour{fail: []string{"B"}}, timeout: 30 * time.Second,
			want: `{"batchItemFailures":[{"itemIdentifier":"m1"},{"itemIdentifier":"m2"}]}`},
		{doc: docPartialBatch, name: "FIFO: a later message of an earlier key in the group is unprocessed after the failure",
			event: fifoOf(batchOf(t, "A", "B", "A"), "g", "g", "g"), conf: behaviour{fail: []string{"B"}}, timeout: 30 * time.Second,
			want: `{"batchItemFailures":[{"itemIdentifier":"m1"},{"itemIdentifier":"m2"}]}`},
		{doc: docPartialBatch, name: "FIFO: a malformed message stops its group",
			event: fifoMalformed, timeout: 30 * time.Second,
			want: `{"batchItemFailures":[{"itemIdentifier":"m0"},{"itemIdentifier":"m1"}]}`},
		{doc: docFIFOLogic, name: "a group's records are handed over in order, interleaved keys and all",
			event: fifoOf(batchOf(t, "A", "B", "A", "C", "B"), "g", "g", "g", "h", "g"), timeout: 30 * time.Second,
			opts: []sqsmw.Option{quiet(lockcore.WithFreshSuccess(0))},
			want: `{"batchItemFailures":[]}`},
		{doc: docFIFOLogic, name: "a key in two groups waits for each",
			event: fifoOf(batchOf(t, "A", "B", "A"), "g", "h", "h"), conf: behaviour{fail: []string{"B"}}, timeout: 30 * time.Second,
			want: `{"batchItemFailures":[{"itemIdentifier":"m1"},{"itemIdentifier":"m2"}]}`},
		{doc: docFIFOName, name: "a queue whose ARN does not end in .fifo is standard, whatever its records carry",
			event: fairOf(batchOf(t, "A", "B", "C"), "g", "g", "g"), conf: behaviour{fail: []string{"B"}}, timeout: 30 * time.Second,
			want: `{"batchItemFailures":[{"itemIdentifier":"m1"}]}`},
		{doc: docFairQueues, name: "a tenant's failing key does not fail the tenant's other keys",
			event: fairOf(batchOf(t, "A", "B", "C", "B"), "t1", "t1", "t1", "t2"), conf: behaviour{fail: []string{"B"}}, timeout: 30 * time.Second,
			want: `{"batchItemFailures":[{"itemIdentifier":"m1"},{"itemIdentifier":"m3"}]}`},
		{doc: docGoContext, name: "a handler that ignores its context: the batch answers before the deadline and reports what is not done",
			event: batchOf(t, "A", "B", "C"), conf: behaviour{work: 10 * time.Second, stubborn: true}, timeout: 14 * time.Second,
			opts: []sqsmw.Option{sqsmw.WithBatchTime(sqsmw.BatchTime{Concurrency: 1, MinKeyTime: time.Second})},
			want: `{"batchItemFailures":[{"itemIdentifier":"m0"},{"itemIdentifier":"m1"},{"itemIdentifier":"m2"}]}`},
		{doc: docGoContext, name: "each key holds for its whole share: the margin is kept once per batch",
			event: batchOf(t, "A", "B", "C", "D"), conf: behaviour{work: 6 * time.Second}, timeout: 30 * time.Second,
			opts: []sqsmw.Option{sqsmw.WithBatchTime(sqsmw.BatchTime{Concurrency: 1, MinKeyTime: time.Second})},
			want: `{"batchItemFailures":[]}`},
		{doc: docGoContext, name: "a key whose minimum time does not fit is reported untried",
			event: batchOf(t, "A"), timeout: 8 * time.Second,
			opts: []sqsmw.Option{sqsmw.WithBatchTime(sqsmw.BatchTime{MinKeyTime: 10 * time.Second})},
			want: `{"batchItemFailures":[{"itemIdentifier":"m0"}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				conf := &conformer{behaviour: tt.conf}
				h := must(sqsmw.New(conf.handle, lockcore.NewMemoryStore(), bodyKey, append([]sqsmw.Option{quiet()}, tt.opts...)...))
				ctx, cancel := invocation(tt.timeout)
				defer cancel()
				start := time.Now()
				resp, err := h(ctx, tt.event)
				took := time.Since(start)
				raw, _ := json.Marshal(resp)
				if err != nil || string(raw) != tt.want {
					t.Errorf("response %s, %v; want %s\n(%s)", raw, err, tt.want, tt.doc)
				}
				if took >= tt.timeout {
					t.Errorf("answered after %v, at or past the %v deadline\n(%s)", took, tt.timeout, docGoContext)
				}
				checkIdentifiers(t, tt.event, resp)
				conf.mu.Lock()
				calls := slices.Clone(conf.calls)
				conf.mu.Unlock()
				checkGroupOrder(t, tt.event, calls)
				time.Sleep(time.Minute) // what a stubborn handler still does ends
				synctest.Wait()
			})
		})
	}
}
