package idempotency

import "errors"

var (
	// ErrConfig is wrapped in every configuration error: one returned by
	// [New], or returned on every call by a handler from [Wrap].
	ErrConfig = errors.New("idempotency: invalid configuration")

	// ErrKey means the event's idempotency key is missing (and
	// [WithOptionalKey] is not given), blank, ends with white space,
	// longer than 1 KiB (an Idempotency-Key header: [MaxKeyBytes]), or
	// the key function failed. The handler did not run. An HTTP layer
	// answers 400.
	ErrKey = errors.New("idempotency: no usable idempotency key")

	// ErrPayloadMismatch means the key was used before with another
	// payload: the fingerprint of the event's payload differs from the
	// one stored with the answer. The handler did not run and the stored
	// answer is not returned. An HTTP layer answers 422.
	ErrPayloadMismatch = errors.New("idempotency: key reused with another payload")

	// ErrInProgress means another invocation with the same key is running
	// and its answer did not come before this invocation's deadline (less
	// the safety margin). The handler did not run; a retry later gets the
	// answer. It wraps lockcore.ErrWaitTimeout. An HTTP layer answers 409.
	ErrInProgress = errors.New("idempotency: an invocation with the same key is in progress")
)
