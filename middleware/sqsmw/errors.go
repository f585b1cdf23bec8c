package sqsmw

import "errors"

var (
	// ErrKeyTooLong means the key function returned an id longer than
	// storeapi.MaxPartitionKeyBytes; the record is reported failed and no
	// lock is taken for it.
	ErrKeyTooLong = errors.New("sqsmw: key too long")

	// ErrBadRecord is for key functions to wrap when a record does not
	// name a key (a body that is not JSON, a missing attribute). Any key
	// error fails the record, wrapped or not.
	ErrBadRecord = errors.New("sqsmw: bad record")
)
