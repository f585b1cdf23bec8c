package idempotency

import (
	"errors"
	"fmt"

	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/middleware/lockmw"
)

// Configuration errors match lockcore.ErrConfig, and an event without a
// usable idempotency key (missing, and [Keys].Optional not set; blank;
// ending with white space;
// longer than 1 KiB, or an Idempotency-Key header over 255 bytes; or the
// key function failed) is an error matching lockmw.ErrKey: the handler
// did not run, and an HTTP layer answers 400.
var (
	// ErrPayloadMismatch means the key was used before with another
	// payload: the fingerprint of the event's payload differs from the
	// one stored with the answer. The handler did not run and the stored
	// answer is not returned. An HTTP layer answers 422.
	ErrPayloadMismatch = errors.New("idempotency: key reused with another payload")

	// ErrInProgress means another invocation with the same key is running
	// and its answer did not come before this invocation's deadline (less
	// the safety margin). The handler did not run; a retry later gets the
	// answer. It wraps lockcore.ErrWaitTimeout. An HTTP layer answers 409.
	// A wait that never had the record from the store (a table that
	// throttled or left unanswered every call) is not ErrInProgress: its
	// error matches lockmw.ErrLockFailed, lockcore.ErrWaitTimeout (and
	// lockcore.ErrThrottled when throttled), and an HTTP layer answers 503.
	ErrInProgress = errors.New("idempotency: an invocation with the same key is in progress")
)

var (
	// errConfig is wrapped in the layer's configuration errors.
	errConfig = fmt.Errorf("idempotency: %w", lockcore.ErrConfig)
	// errKey is wrapped in the layer's key errors.
	errKey = fmt.Errorf("idempotency: %w", lockmw.ErrKey)
)
