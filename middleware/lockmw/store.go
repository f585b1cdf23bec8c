package lockmw

import (
	"context"
	"time"

	"github.com/herdlock/herdlock/lockcore"
)

// boundedStore ends the store calls of acquiring and waiting at until, the
// invocation's deadline minus the safety margin, so that a hung store gives
// FAILED while there is still time to reply. Renewals and releases pass
// through: lockcore bounds those itself (by the lease validity, and by the
// time the invocation has left).
type boundedStore struct {
	lockcore.Store
	until time.Time
}

func (s boundedStore) Acquire(ctx context.Context, req lockcore.AcquireRequest) (lockcore.Item, error) {
	ctx, cancel := context.WithDeadline(ctx, s.until)
	defer cancel()
	return s.Store.Acquire(ctx, req)
}

func (s boundedStore) Get(ctx context.Context, key lockcore.Key) (lockcore.Item, bool, error) {
	ctx, cancel := context.WithDeadline(ctx, s.until)
	defer cancel()
	return s.Store.Get(ctx, key)
}

func (s boundedStore) Enroll(ctx context.Context, key lockcore.Key, revision string) (lockcore.Item, error) {
	ctx, cancel := context.WithDeadline(ctx, s.until)
	defer cancel()
	return s.Store.Enroll(ctx, key, revision)
}
