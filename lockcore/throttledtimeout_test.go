package lockcore_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/lockcore/storeapi"
)

// A wait that the store throttles until it times out ends with
// ErrWaitTimeout and ErrThrottled, on a store whose calls take time and
// honour their context: the last poll, cut short by the wait's own
// deadline, does not replace the throttle with the context's deadline
// error, which the caller, whose context is alive, must not see.
func TestThrottledWaitTimeoutKeepsItsCause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := lockcore.NewMemoryStore()
		holder := newLock(t, mem, "holder")
		mustAcquire(t, holder)
		throttled := fmt.Errorf("lockcore: dynamodb get: %w: ProvisionedThroughputExceededException", lockcore.ErrThrottled)
		store := &hookStore{Store: mem}
		store.get = func(ctx context.Context, k lockcore.Key) (storeapi.Item, bool, error) {
			if err := roundTrip(ctx, 30*time.Millisecond); err != nil {
				return storeapi.Item{}, false, err
			}
			return storeapi.Item{}, false, throttled
		}
		store.acquire = func(ctx context.Context, r storeapi.AcquireRequest) (storeapi.Item, error) {
			if err := roundTrip(ctx, 30*time.Millisecond); err != nil {
				return storeapi.Item{}, err
			}
			return storeapi.Item{}, throttled
		}
		w := newLock(t, store, "waiter", lockcore.WithMaxWait(2*time.Second))
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // alive throughout
		defer cancel()
		res, err := w.TryAcquireElseWaitForRelease(ctx)
		if res.Outcome != lockcore.Failed {
			t.Fatalf("outcome = %v, want FAILED", res.Outcome)
		}
		if !errors.Is(err, lockcore.ErrWaitTimeout) || !errors.Is(err, lockcore.ErrThrottled) {
			t.Errorf("err = %v, want it to match ErrWaitTimeout and ErrThrottled", err)
		}
		if errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("err = %v matches context.DeadlineExceeded, but the caller's context is alive", err)
		}
		if ctx.Err() != nil {
			t.Fatalf("caller's context ended: %v", ctx.Err())
		}
		mustRelease(t, holder, lockcore.Success, "")
	})
}
