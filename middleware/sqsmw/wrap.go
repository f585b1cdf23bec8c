package sqsmw

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-lambda-go/events"
	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/middleware/internal/answer"
	"github.com/herdlock/herdlock/middleware/lockmw"
)

// Handler works on the records of one key: it runs in the invocation that
// holds the key's lock, with the lock's holder context, and its nil error
// means every record of the key is done. It must be safe for concurrent
// use: a batch's keys run at once.
type Handler func(ctx context.Context, key string, records []events.SQSMessage) error

// group is the event of one key attempt: the key and its records.
type group struct {
	key     string
	records []events.SQSMessage
}

// Wrap returns h wrapped in a lock per key on store, in the shape that
// lambda.Start accepts for an SQS event source mapping with
// ReportBatchItemFailures:
//
//	lambda.Start(sqsmw.Wrap(refresh, store, pairOf))
//
// key takes each record's lock id; see the package documentation for how
// a batch is grouped, timed and answered. The returned handler never
// returns an error (a failure is a record in the response) and is safe for
// concurrent use. A bad configuration fails every record: a nil key
// function, or a nil h or store or bad lockmw options, which lockmw logs
// once.
func Wrap(h Handler, store lockcore.Store, key func(ctx context.Context, record events.SQSMessage) (string, error),
	opts ...Option) func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
	o := buildOptions(opts)
	var fetch func(context.Context, group) (answer.Answer, error)
	if h != nil {
		fetch = func(ctx context.Context, g group) (answer.Answer, error) {
			return answer.Done, h(ctx, g.key, g.records)
		}
	}
	lockOpts := append([]lockmw.Option{lockmw.WithPanicAsError(true)}, o.lockOpts...)
	// The answer is the fronts' shared format (a bare success), so that an
	// HTTP front on the same lock group reads this front's success, and
	// this front any success of theirs.
	b := &batcher{
		o:   o,
		key: key,
		invoke: lockmw.WrapHandlers(lockmw.Handlers[group, answer.Answer]{Fetch: fetch, Codec: answer.Codec{}}, store,
			func(_ context.Context, g group) (string, error) { return g.key, nil }, lockOpts...),
	}
	return b.handle
}

// batcher answers batches.
type batcher struct {
	o      options
	key    func(context.Context, events.SQSMessage) (string, error)
	invoke func(context.Context, group) (answer.Answer, error)
}

// recordKey is the lock id of r, checked.
func (b *batcher) recordKey(ctx context.Context, r events.SQSMessage) (string, error) {
	if b.key == nil {
		return "", errors.New("sqsmw: nil key function")
	}
	id, err := b.key(ctx, r)
	if err != nil {
		return "", err
	}
	id = strings.TrimSpace(id)
	switch {
	case id == "":
		return "", fmt.Errorf("%w: blank key", ErrBadRecord)
	case len(id) > lockcore.MaxPartitionKeyBytes:
		return "", fmt.Errorf("%w: %d bytes, at most %d", ErrKeyTooLong, len(id), lockcore.MaxPartitionKeyBytes)
	}
	return id, nil
}

// isFIFO reports whether the batch comes from a FIFO queue.
func isFIFO(records []events.SQSMessage) bool {
	for _, r := range records {
		if r.Attributes["MessageGroupId"] != "" || strings.HasSuffix(r.EventSourceARN, ".fifo") {
			return true
		}
	}
	return false
}
