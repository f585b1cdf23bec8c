package sqsmw

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/lockcore/storeapi"
	"github.com/herdlock/herdlock/middleware/internal/answer"
	"github.com/herdlock/herdlock/middleware/lockmw"
)

// Handler works on the records of one turn of a key: on a standard queue
// all the batch's records of the key, on a FIFO queue one run of them in
// a message group, in the group's order. It runs in the invocation that
// holds the key's lock, with the lock's holder context, whose deadline is
// the end of the turn's share of the batch's time, and its nil error means
// every record of the turn is done. It must be safe for concurrent use: a
// batch's keys run at once.
type Handler func(ctx context.Context, key string, records []events.SQSMessage) error

// group is the event of one turn's lock attempt: the key, its records,
// and the end of its share of the batch's time (zero: no deadline).
type group struct {
	key       string
	records   []events.SQSMessage
	holdUntil time.Time
}

// New returns h wrapped in a lock per key on store, in the shape that
// lambda.Start accepts for an SQS event source mapping with
// ReportBatchItemFailures:
//
//	h, err := sqsmw.New(refresh, store, pairOf)
//	if err != nil {
//		log.Fatal(err) // a configuration error, at init
//	}
//	lambda.Start(h)
//
// key takes each record's lock id, before any key is tried; its context
// ends at the batch's end (the deadline less the batch margin), and a key
// function still running when the batch must answer fails every record.
// See the package documentation for how a batch is grouped, timed and
// answered. The returned handler never returns an error (a failure is a
// record in the response) and is safe for concurrent use. A bad
// configuration (a nil h, key function or store, a bad option value, bad
// lockmw options) is an error matching lockcore.ErrConfig that names
// every problem found, and no handler.
func New(h Handler, store storeapi.Store, key func(ctx context.Context, record events.SQSMessage) (string, error),
	opts ...Option) (func(context.Context, events.SQSEvent) (events.SQSEventResponse, error), error) {
	o, err := buildOptions(opts)
	if err != nil {
		return nil, err
	}
	if key == nil {
		return nil, fmt.Errorf("sqsmw: %w: nil key function", lockcore.ErrConfig)
	}
	var fetch func(context.Context, group) (answer.Answer, error)
	if h != nil {
		fetch = func(ctx context.Context, g group) (answer.Answer, error) {
			if !g.holdUntil.IsZero() {
				// The hold ends then (lockcore cancels it a little
				// earlier, by its drift allowance); the handler's
				// context says so.
				var cancel context.CancelFunc
				ctx, cancel = context.WithDeadlineCause(ctx, g.holdUntil, lockcore.ErrMaxHoldReached)
				defer cancel()
			}
			return answer.Done, h(ctx, g.key, g.records)
		}
	}
	// The batch margin is each key's safety margin: a key's context ends
	// that long after its share, so lockmw holds until the share's end and
	// releases in the margin, which the batch keeps once.
	// A key's release uses three quarters of the margin at most, also
	// when its handler returns early (lockmw's own default lets it take a
	// lease, up to its context's deadline): the time after it is the
	// later keys' shares. A release timeout in the options replaces it.
	lockOpts := []lockmw.Option{lockmw.WithPanicAsError(), lockmw.WithLockOptions(lockcore.WithMaxHold(maxShare))}
	if rt := o.margin * 3 / 4; rt > 0 {
		lockOpts = append(lockOpts, lockmw.WithLockOptions(lockcore.WithStoreCalls(lockcore.StoreCalls{ReleaseTimeout: rt})))
	}
	lockOpts = append(lockOpts, o.lockOpts...)
	lockOpts = append(lockOpts, lockmw.WithSafetyMargin(o.margin))
	// The answer is the fronts' shared format (a bare success), so that an
	// HTTP front on the same lock group reads this front's success, and
	// this front any success of theirs.
	inner, err := lockmw.NewHandlers(lockmw.Handlers[group, answer.Answer]{Fetch: fetch, Codec: answer.Codec{}},
		store, func(_ context.Context, g group) (string, error) { return g.key, nil }, lockOpts...)
	if err != nil {
		if !errors.Is(err, lockcore.ErrConfig) {
			err = fmt.Errorf("sqsmw: %w: %w", lockcore.ErrConfig, err)
		}
		return nil, err
	}
	b := &batcher{
		o:      o,
		key:    key,
		log:    lockmw.LoggerOf(lockOpts...),
		invoke: doneOnSuccess(inner),
	}
	return b.handle, nil
}

// doneOnSuccess makes a turn that another holder's success answered done,
// whatever that holder published with it: a holder with a read handler of
// its own publishes no inline answer, and lockmw tells its waiters so with
// ErrNoAnswer, which for a queue's records is a success all the same.
func doneOnSuccess(invoke func(context.Context, group) (answer.Answer, error)) func(context.Context, group) (answer.Answer, error) {
	return func(ctx context.Context, g group) (answer.Answer, error) {
		a, err := invoke(ctx, g)
		if errors.Is(err, lockmw.ErrNoAnswer) {
			return answer.Done, nil
		}
		return a, err
	}
}

// maxShare is the longest share of a batch's time, Lambda's longest
// timeout: sqsmw's default maximum hold, so that a key holds for its whole
// share (lockcore's default, 5 min, would end it earlier than its
// context's deadline says); the share itself caps each hold.
const maxShare = 15 * time.Minute

// batcher answers batches.
type batcher struct {
	o   options
	key func(context.Context, events.SQSMessage) (string, error)
	log *slog.Logger

	invoke func(context.Context, group) (answer.Answer, error)
}

// recordKey is the lock id of r, checked.
func (b *batcher) recordKey(ctx context.Context, r events.SQSMessage) (string, error) {
	id, err := b.callKey(ctx, r)
	if err != nil {
		return "", err
	}
	id = strings.TrimSpace(id)
	switch {
	case id == "":
		return "", fmt.Errorf("sqsmw: %w: blank key", lockmw.ErrKey)
	case len(id) > storeapi.MaxPartitionKeyBytes:
		return "", fmt.Errorf("%w: %d bytes, at most %d", errKeyTooLong, len(id), storeapi.MaxPartitionKeyBytes)
	}
	return id, nil
}

// callKey runs the key function; its panic is that record's error, not
// the batch's: the other records are still worked and answered.
func (b *batcher) callKey(ctx context.Context, r events.SQSMessage) (id string, err error) {
	defer func() {
		if v := recover(); v != nil {
			id, err = "", &keyPanic{value: v, stack: string(debug.Stack())}
		}
	}()
	return b.key(ctx, r)
}

// keyPanic is the error of a record whose key function panicked: the
// function's bug, which the batch logs at Error with the panic and its
// stack.
type keyPanic struct {
	value any
	stack string
}

func (e *keyPanic) Error() string { return "sqsmw: the key function panicked" }

func (e *keyPanic) Unwrap() error { return lockmw.ErrKey }

// isFIFO reports whether r comes from a FIFO queue: one whose ARN ends in
// ".fifo", as every FIFO queue's name does. A MessageGroupId alone says
// nothing: a standard queue's messages carry one too (fair queues).
func isFIFO(r events.SQSMessage) bool {
	return strings.HasSuffix(r.EventSourceARN, ".fifo")
}
