package sqsmw

import (
	"context"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// turn is one lock attempt of a batch: a key and the records it hands
// over, in the batch's order.
type turn struct {
	key string // "" for a record with no usable key: the turn fails untried
	idx []int  // the records' positions in the batch
}

// lane is a sequence of turns worked through one after another; a failed
// turn fails the rest of its lane untried.
type lane []turn

// batch is the state of one SQS event.
type batch struct {
	b        *batcher
	ctx      context.Context
	records  []events.SQSMessage
	ids      []string  // each record's key, "" when it has none
	end      time.Time // when key attempts stop holding: the deadline less the batch margin
	answerBy time.Time // when the batch answers, whatever is not finished
	hasDL    bool
	rounds   int // turns tried at once: min(concurrency, lanes)

	mu       sync.Mutex
	ok       []bool // records done
	notTried int    // turns not yet tried
}

// handle answers one SQS event.
func (b *batcher) handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	bt := &batch{b: b, ctx: ctx, records: ev.Records, ids: make([]string, len(ev.Records)), ok: make([]bool, len(ev.Records))}
	if dl, ok := ctx.Deadline(); ok {
		bt.hasDL = true
		bt.end = dl.Add(-b.o.margin)
		bt.answerBy = dl.Add(-b.o.margin / 4)
	}
	var bad []badRecord
	for i, r := range ev.Records {
		id, err := b.recordKey(ctx, r)
		if err != nil {
			bad = append(bad, badRecord{id: r.MessageId, err: err})
			continue // failed: no lock for a key not asked for
		}
		bt.ids[i] = id
	}
	b.logBadRecords(ctx, bad)
	lanes := bt.lanes()
	for _, l := range lanes {
		bt.notTried += len(l)
	}
	bt.rounds = max(min(b.o.concurrency, len(lanes)), 1)
	bt.run(lanes)
	return bt.response(), nil
}

// lanes are the batch's turns. A record of a FIFO queue (see [isFIFO])
// is in its message group's lane, whose turns are the group's runs of
// consecutive records of one key, in order: no record is handed over
// before the one ahead of it in its group is done. Every other record is
// in its key's lane of one turn, with all the key's records: a standard
// queue promises no order, and its MessageGroupId (a fair queue's
// tenant) orders nothing.
func (bt *batch) lanes() []lane {
	var lanes []lane
	at := map[string]int{} // lane name -> index
	for i, r := range bt.records {
		fifo := isFIFO(r)
		var name string
		switch {
		case fifo:
			name = "g\x00" + r.EventSourceARN + "\x00" + r.Attributes["MessageGroupId"]
		case bt.ids[i] == "":
			continue // no key: failed, nothing to try
		default:
			name = "k\x00" + bt.ids[i]
		}
		j, ok := at[name]
		if !ok {
			j = len(lanes)
			at[name] = j
			lanes = append(lanes, nil)
		}
		l := lanes[j]
		if n := len(l); n > 0 && l[n-1].key == bt.ids[i] && bt.ids[i] != "" {
			l[n-1].idx = append(l[n-1].idx, i)
		} else {
			l = append(l, turn{key: bt.ids[i], idx: []int{i}})
		}
		lanes[j] = l
	}
	return lanes
}

// run works the lanes through, at most the concurrency at once, until they
// are done or the batch must answer.
func (bt *batch) run(lanes []lane) {
	work := make(chan lane)
	finished := make(chan struct{})
	var wg sync.WaitGroup
	for range bt.rounds {
		wg.Go(func() {
			for l := range work {
				bt.runLane(l)
			}
		})
	}
	go func() {
		defer close(finished)
		defer wg.Wait()
		defer close(work)
		for _, l := range lanes {
			select {
			case work <- l:
			case <-bt.ctx.Done():
				return
			}
		}
	}()
	var stop <-chan time.Time
	if bt.hasDL {
		t := time.NewTimer(time.Until(bt.answerBy))
		defer t.Stop()
		stop = t.C
	}
	select {
	case <-finished:
	case <-stop: // answer now; what is not done is reported failed
	}
}

// runLane works through one lane's turns in order; after a failure the
// rest of the lane fails without being tried.
func (bt *batch) runLane(l lane) {
	for n, tn := range l {
		if !bt.attempt(tn) {
			bt.drop(len(l) - n - 1) // the turns after it share no time now
			return
		}
		bt.mu.Lock()
		for _, i := range tn.idx {
			bt.ok[i] = true
		}
		bt.mu.Unlock()
	}
}

// drop takes n turns that will not be tried out of the time sharing.
func (bt *batch) drop(n int) {
	bt.mu.Lock()
	bt.notTried -= n
	bt.mu.Unlock()
}

// attempt tries one turn and reports whether it succeeded. A turn that
// cannot get its share of the time (at least the minimum key time) before
// the batch's end is failed untried: no lock is asked for.
func (bt *batch) attempt(tn turn) bool {
	if tn.key == "" {
		bt.drop(1)
		return false
	}
	share, ok := bt.share()
	if !ok {
		return false
	}
	records := make([]events.SQSMessage, len(tn.idx))
	for j, i := range tn.idx {
		records[j] = bt.records[i]
	}
	g := group{key: tn.key, records: records, holdUntil: share}
	ctx, cancel := bt.ctx, context.CancelFunc(func() {})
	if !share.IsZero() {
		// lockmw holds until its context's deadline less its safety
		// margin, which is the batch margin: the share's end. The margin
		// beyond it is for the release, as for the batch's last key.
		ctx, cancel = context.WithDeadline(bt.ctx, share.Add(bt.b.o.margin))
	}
	defer cancel()
	_, err := bt.b.invoke(ctx, g)
	return err == nil
}

// share is the end of the next turn's share of the time: the time left
// before the batch's end divided by the rounds of turns still to come,
// at least the minimum key time. It is false when that minimum does not
// fit before the batch's end, or the batch's context has ended; the zero
// time when the batch has no deadline.
func (bt *batch) share() (time.Time, bool) {
	bt.mu.Lock()
	waves := (bt.notTried + bt.rounds - 1) / bt.rounds
	bt.notTried--
	bt.mu.Unlock()
	if bt.ctx.Err() != nil {
		return time.Time{}, false
	}
	if !bt.hasDL {
		return time.Time{}, true
	}
	now := time.Now()
	left := bt.end.Sub(now)
	if left < max(bt.b.o.minKeyTime, 1) {
		return time.Time{}, false
	}
	share := max(left/time.Duration(max(waves, 1)), bt.b.o.minKeyTime)
	return now.Add(share), true
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
