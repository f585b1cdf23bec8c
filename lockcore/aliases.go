package lockcore

import "github.com/herdlock/herdlock/lockcore/storeapi"

// Key names one lock: a group (a kind of resource, such as "fx-rates") and
// an id within it (such as "EUR-USD"). It is [storeapi.Key].
type Key = storeapi.Key

// Result is the outcome a holder publishes when it releases the lock. It is
// [storeapi.Result].
type Result = storeapi.Result

const (
	// Success means the holder stored what waiters came for: they read it
	// instead of fetching again.
	Success = storeapi.Success
	// Failure means the holder did not finish: one waiter takes over, when
	// the failure's not-before time and attempt bound allow it.
	Failure = storeapi.Failure
)

// MaxAnswerBytes is the largest answer [Lock.Release] accepts with
// [WithAnswer] (300 KiB): well under DynamoDB's 400 KB item limit, leaving
// room for the rest of the item. Every strongly consistent read of the item
// pays for the answer too (1 read unit per 4 KB), so keep answers small.
const MaxAnswerBytes = storeapi.MaxAnswerBytes

// ErrAnswerTooLarge means an answer given to [WithAnswer] is longer than
// [MaxAnswerBytes]. Release returns it before writing anything: the lock is
// still held, and a Release without the answer (publishing a reference
// instead) can follow. It is [storeapi.ErrAnswerTooLarge].
var ErrAnswerTooLarge = storeapi.ErrAnswerTooLarge
