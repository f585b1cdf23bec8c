package storeapi

import (
	"errors"
	"fmt"
)

var (
	// ErrConditionFailed is matched by every *ConditionError: the store
	// refused a conditional write because the item was not in the state the
	// write required.
	ErrConditionFailed = errors.New("storeapi: condition failed")

	// ErrAnswerTooLarge means an answer given to lockcore.WithAnswer is longer than
	// [MaxAnswerBytes]. Release returns it before writing anything: the lock
	// is still held, and a Release without the answer (publishing a
	// reference instead) can follow.
	ErrAnswerTooLarge = errors.New("storeapi: answer too large")

	// ErrItemTooLarge means a write would make the lock item larger than
	// [MaxItemBytes], which DynamoDB refuses with a ValidationException.
	// Nothing was written.
	ErrItemTooLarge = errors.New("storeapi: item too large")
)

// ConditionError is returned by a [Store] when a conditional write fails. It
// carries the item as the store saw it, or nil when there was none.
type ConditionError struct {
	Op      string // "acquire", "renew" or "release"
	Current *Item
}

func (e *ConditionError) Error() string {
	if e.Current == nil {
		return fmt.Sprintf("storeapi: %s: condition failed: no lock item", e.Op)
	}
	return fmt.Sprintf("storeapi: %s: condition failed: item at revision %q, fence %d, released %t",
		e.Op, e.Current.Revision, e.Current.Fence, e.Current.Released)
}

// Is makes errors.Is(err, ErrConditionFailed) true.
func (e *ConditionError) Is(target error) bool { return target == ErrConditionFailed }

// ItemError reports a stored item that lockcore.List could not decode. The listing
// goes on after it.
type ItemError struct {
	PartitionKey string // the item's AttrLockKey, or "" when it has none
	Err          error
}

func (e *ItemError) Error() string {
	return fmt.Sprintf("storeapi: list: item %q: %v", e.PartitionKey, e.Err)
}

func (e *ItemError) Unwrap() error { return e.Err }
