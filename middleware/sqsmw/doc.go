// Package sqsmw puts the lock of package lockmw behind an SQS event source
// mapping with ReportBatchItemFailures, for standard and FIFO queues.
//
// [New] groups a batch by key: the key function names each record's lock
// id, and each turn of a key is one lock attempt through lockmw, whose
// handler gets the turn's records and whose answer they all get. Batches
// on other invocations coalesce through the lock as any invocation does:
// a key that another invocation's handler is working on waits for it, and
// a key it released with success (also one still fresh, see
// lockcore.WithFreshSuccess) is done without the handler running here,
// whatever that holder published with it; a turn publishes no inline
// answer.
//
// On a standard queue a key has one turn with all its records, and the
// keys run at once. A MessageGroupId there (SQS fair queues) names a
// tenant and orders nothing: one key failing fails only its own records.
// A queue is FIFO when its ARN (eventSourceARN) ends in ".fifo". There
// each message group is worked through strictly in order: a turn is a run
// of consecutive records of one key in the group, handed over only after
// the turn before it succeeded, and at a group's first failure the rest
// of the group is reported failed untried, as Lambda requires. A key's
// later turn in a group is a new lock attempt, which a still fresh success
// of its earlier turn answers.
//
// The result is an events.SQSEventResponse naming exactly the records to
// retry: those whose key failed (the handler's error or panic, a shared
// failure of the burst, a wait that ran out), those with no usable key
// (logged once per batch, at Warn, truncated), and those the batch had no
// time left to finish.
//
// The batch keeps one margin ([BatchTime].Margin) from the invocation's
// deadline, for all its keys. The time before it is shared fairly: a turn
// gets the time left divided by the rounds of turns still to come, raised
// to [BatchTime].MinKeyTime, and holds its lock, and waits, for all of it; the
// handler's context ends then. A turn that cannot get its minimum before
// the batch's end is not tried: its records are reported failed (one
// warning a batch says how many), and nothing is published for the key.
// The batch answers by the deadline less a quarter of the margin and
// reports what is not finished then as failed, never dropped; one warning
// says so.
package sqsmw
