package idempotency

import (
	"context"
	"fmt"

	"github.com/aws/aws-lambda-go/events"
	"github.com/herdlock/herdlock/lockcore/storeapi"
	"github.com/herdlock/herdlock/middleware/sqsmw"
)

// SQSHandler returns h, a handler of one SQS record, made idempotent per
// record and turned into the handler that sqsmw.New takes, so that a
// redelivered record (SQS delivers at least once) is not processed twice
// while the batch keeps sqsmw's partial batch response:
//
//	records, err := idempotency.SQSHandler(process, store, idempotency.MessageID)
//	batch, err := sqsmw.New(records, store, idempotency.MessageID)
//
// key takes each record's idempotency key: [MessageID], or a key from the
// body (sqsmw.JSONBody). The fingerprint is of the record's body (a JSON
// body in its canonical form, as [WrapHTTP]'s), never of its receipt
// handle or receive count, which change with every delivery. Each record of sqsmw's group runs through the idempotent
// operation: processed once per key and retention, a completed one
// replayed (nothing done), one in progress elsewhere waited for; the
// group stops at its first failed record, whose error is the group's
// (the records after it are not run), and sqsmw reports the group's
// records failed. With sqsmw keyed by [MessageID], a group is one record,
// so exactly the failed records are retried; the record's lock then
// needs the time of sqsmw's key attempt less lockmw's safety margin, so
// give sqsmw.BatchTime a MinKeyTime of at least that margin plus the handler's time.
// A redelivery after the retention runs the handler again: give
// [Retention].Answers more than the time a record can take to come back
// (its visibility timeout, once per receive up to the queue's
// maxReceiveCount).
//
// It returns the configuration error, matching lockcore.ErrConfig, like [New].
// The returned handler is safe for concurrent use when h is.
func SQSHandler(h func(ctx context.Context, record events.SQSMessage) error, store storeapi.Store,
	key func(ctx context.Context, record events.SQSMessage) (string, error), opts ...Option) (sqsmw.Handler, error) {
	if h == nil {
		return nil, fmt.Errorf("%w: nil SQS record handler", errConfig)
	}
	op, err := New(Handlers[events.SQSMessage, struct{}]{
		Handle:  func(ctx context.Context, r events.SQSMessage) (struct{}, error) { return struct{}{}, h(ctx, r) },
		Key:     key,
		Payload: func(r events.SQSMessage) any { return bodyOf([]byte(r.Body)) },
	}, store, opts...)
	if err != nil {
		return nil, err
	}
	// The records of one key stop at the first failure: sqsmw fails them
	// together, so a later one run after it would call the upstream once
	// more for a failing key and, in a FIFO message group, run ahead of
	// the redelivery of the message before it. Those done before it are
	// replayed, not run again, when the batch is delivered again.
	return func(ctx context.Context, _ string, records []events.SQSMessage) error {
		for i, r := range records {
			if _, err := op(ctx, r); err != nil {
				if rest := len(records) - i - 1; rest > 0 {
					return fmt.Errorf("record %s: %w (%d later records not run)", r.MessageId, err, rest)
				}
				return fmt.Errorf("record %s: %w", r.MessageId, err)
			}
		}
		return nil
	}, nil
}

// MessageID is the key function of a record by its SQS message id, which
// a redelivery keeps. It is safe for concurrent use.
func MessageID(_ context.Context, r events.SQSMessage) (string, error) { return r.MessageId, nil }
