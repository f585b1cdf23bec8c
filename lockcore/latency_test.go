package lockcore_test

import (
	"context"
	"time"
)

// roundTrip waits d, or until ctx ends, as a call to a remote store does;
// it returns ctx's error in that case.
func roundTrip(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
