package sqsmw

import (
	"context"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// keyRun is the one attempt of a key in a batch.
type keyRun struct {
	once    sync.Once
	done    chan struct{}
	ok      bool
	records []events.SQSMessage
}

// batch is the state of one SQS event.
type batch struct {
	b        *batcher
	ctx      context.Context
	records  []events.SQSMessage
	ids      []string // each record's key, "" when it has none
	keys     map[string]*keyRun
	deadline time.Time
	hasDL    bool
	rounds   int // keys tried at once: min(concurrency, lanes)

	mu       sync.Mutex
	ok       []bool // records done
	notTried int    // keys not yet tried
}

// handle answers one SQS event.
func (b *batcher) handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	bt := &batch{b: b, ctx: ctx, records: ev.Records, ids: make([]string, len(ev.Records)),
		keys: map[string]*keyRun{}, ok: make([]bool, len(ev.Records))}
	bt.deadline, bt.hasDL = ctx.Deadline()
	for i, r := range ev.Records {
		id, err := b.recordKey(ctx, r)
		if err != nil {
			continue // failed: no lock for a key not asked for
		}
		bt.ids[i] = id
		k := bt.keys[id]
		if k == nil {
			k = &keyRun{done: make(chan struct{})}
			bt.keys[id] = k
		}
		k.records = append(k.records, r)
	}
	bt.notTried = len(bt.keys)
	lanes := bt.lanes(isFIFO(ev.Records))
	bt.rounds = max(min(b.o.concurrency, len(lanes)), 1)
	bt.run(lanes)
	return bt.response(), nil
}

// lanes are the record sequences worked through one after another: on a
// FIFO queue one per message group, in the batch's order; otherwise one
// per key.
func (bt *batch) lanes(fifo bool) [][]int {
	var lanes [][]int
	at := map[string]int{}
	for i, r := range bt.records {
		var lane string
		switch {
		case fifo:
			lane = r.Attributes["MessageGroupId"]
		case bt.ids[i] == "":
			continue // no key: failed, nothing to try
		default:
			lane = bt.ids[i]
		}
		j, ok := at[lane]
		if !ok {
			j = len(lanes)
			at[lane] = j
			lanes = append(lanes, nil)
		}
		lanes[j] = append(lanes[j], i)
	}
	return lanes
}

// run works the lanes through, at most the concurrency at once, until they
// are done or the batch's time is up.
func (bt *batch) run(lanes [][]int) {
	work := make(chan []int)
	finished := make(chan struct{})
	var wg sync.WaitGroup
	for range bt.rounds {
		wg.Go(func() {
			for lane := range work {
				bt.runLane(lane)
			}
		})
	}
	go func() {
		defer close(finished)
		defer wg.Wait()
		defer close(work)
		for _, lane := range lanes {
			select {
			case work <- lane:
			case <-bt.ctx.Done():
				return
			}
		}
	}()
	var stop <-chan time.Time
	if bt.hasDL {
		t := time.NewTimer(time.Until(bt.deadline.Add(-bt.b.o.margin)))
		defer t.Stop()
		stop = t.C
	}
	select {
	case <-finished:
	case <-stop: // answer now; what is not done is reported failed
	}
}

// runLane works through one lane's records in order; after a failure the
// rest of the lane fails without being tried.
func (bt *batch) runLane(lane []int) {
	for _, i := range lane {
		id := bt.ids[i]
		if id == "" || !bt.attempt(id) {
			return
		}
		bt.mu.Lock()
		bt.ok[i] = true
		bt.mu.Unlock()
	}
}

// attempt tries key id once per batch, and reports whether it succeeded;
// a later caller waits for the first one's answer.
func (bt *batch) attempt(id string) bool {
	k := bt.keys[id]
	k.once.Do(func() {
		defer close(k.done)
		if bt.ctx.Err() != nil {
			return
		}
		ctx, cancel := bt.keyContext()
		defer cancel()
		_, err := bt.b.invoke(ctx, group{key: id, records: k.records})
		k.ok = err == nil
	})
	select {
	case <-k.done:
		return k.ok
	case <-bt.ctx.Done():
		return false
	}
}

// keyContext is the context of the next key attempt: the batch's, with
// a fair share of the time left as its deadline.
func (bt *batch) keyContext() (context.Context, context.CancelFunc) {
	bt.mu.Lock()
	waves := (bt.notTried + bt.rounds - 1) / bt.rounds
	bt.notTried--
	bt.mu.Unlock()
	if !bt.hasDL {
		return context.WithCancel(bt.ctx)
	}
	end := bt.deadline.Add(-bt.b.o.margin)
	share := time.Until(end) / time.Duration(max(waves, 1))
	share = max(share, bt.b.o.minKeyTime)
	return context.WithDeadline(bt.ctx, time.Now().Add(share))
}

// response names every record not done, once each, in the batch's order.
func (bt *batch) response() events.SQSEventResponse {
	bt.mu.Lock()
	defer bt.mu.Unlock()
	resp := events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{}}
	seen := map[string]bool{}
	for i, r := range bt.records {
		if bt.ok[i] || seen[r.MessageId] {
			continue
		}
		seen[r.MessageId] = true
		resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: r.MessageId})
	}
	return resp
}
