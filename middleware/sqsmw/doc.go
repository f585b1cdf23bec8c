// Package sqsmw puts the lock of package lockmw behind an SQS event source
// mapping with ReportBatchItemFailures, for standard and FIFO queues.
//
// [Wrap] groups a batch by key: the key function names each record's lock
// id, and each distinct id is one lock attempt through lockmw, so the
// handler runs at most once per key and batch, with every record of that
// key, and every record of the key gets the same answer. Batches on other
// invocations coalesce through the lock as any invocation does: a key
// that another invocation's handler is working on waits for it, and a
// key it released with success (also one still fresh, see
// lockcore.WithFreshSuccess) is done without the handler running here.
//
// The result is an events.SQSEventResponse naming exactly the records to
// retry: those whose key failed (the handler's error, a shared failure of
// the burst, a wait that ran out), those with no usable key, and those the
// batch had no time left to finish. A key failing fails only its own
// records. On a FIFO queue (records with a MessageGroupId), each message
// group is worked through in order, and a record after a failed one in its
// group is reported failed too, as Lambda requires to keep the group's
// order.
//
// The time left before the invocation's deadline is shared fairly: a key
// attempt gets the remaining time divided by the rounds of attempts still
// to come, at least [WithMinKeyTime]; the batch answers before its
// deadline ([WithBatchMargin]) and reports what is not finished then as
// failed, never dropped.
package sqsmw
