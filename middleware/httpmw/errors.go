package httpmw

import (
	"errors"
	"fmt"

	"github.com/herdlock/herdlock/middleware/lockmw"
)

var (
	// ErrBadRequest is matched by the errors of the key helpers ([PathParam],
	// [Query], [Header], [JSONBody]) and of [DecodeJSON] when the request
	// does not carry what they read. A key function may wrap it too; every
	// key error is answered 400 either way, and one matching it is logged
	// at Warn. A handler error matching it is answered 400 and is the
	// client's alone: not shared with the key's other requests, not
	// published as the key's failure, not counted as an attempt. A
	// handler error matching lockmw.ErrBadInput is the same and answered
	// the same.
	ErrBadRequest = errors.New("httpmw: bad request")

	// errKeyTooLong means the key function returned an id longer than
	// storeapi.MaxPartitionKeyBytes. The request is answered 400 with the
	// reason key_too_long and no lock is taken.
	errKeyTooLong = fmt.Errorf("httpmw: %w: too long", lockmw.ErrKey)
)
