package httpmw

import "errors"

var (
	// ErrBadRequest is matched by the errors of the key helpers ([PathParam],
	// [Query], [Header], [JSONBody]) when the request does not carry what
	// they read. A key function may wrap it too; every key error is
	// answered 400 either way.
	ErrBadRequest = errors.New("httpmw: bad request")

	// ErrKeyTooLong means the key function returned an id longer than
	// lockcore.MaxPartitionKeyBytes. The request is answered 400 and no lock
	// is taken.
	ErrKeyTooLong = errors.New("httpmw: key too long")
)
