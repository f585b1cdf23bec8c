package lockcore_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/herdlock/herdlock/lockcore"
)

// TestPredictedEndPastTheDeadline: the key's history says holds take 20 s
// (steady), so a waiter's guess of the current holder's end lies past the
// waiter's 10 s maximum wait. The holder is quicker than the history and
// publishes success after 2 s: the waiter, which has 8 s left, must read it
// within the ordinary pace and be RELEASED, not sleep on the guess to its
// deadline and end FAILED with ErrWaitTimeout, the success unread.
func TestPredictedEndPastTheDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := lockcore.NewMemoryStore()
		first := newLock(t, s, "first", lockcore.WithFreshSuccess(0))
		mustAcquire(t, first)
		time.Sleep(20 * time.Second)
		mustRelease(t, first, lockcore.Success, "ref-first")

		holder := newLock(t, s, "holder", lockcore.WithFreshSuccess(0))
		mustAcquire(t, holder)
		fence := holder.Fence()
		var releasedAt time.Time
		time.AfterFunc(2*time.Second, func() {
			releasedAt = time.Now()
			if err := holder.Release(context.Background(), lockcore.Success, "ref-holder"); err != nil {
				t.Errorf("holder's release: %v", err)
			}
		})
		time.Sleep(100 * time.Millisecond)
		w := newLock(t, s, "waiter", lockcore.WithFreshSuccess(0), lockcore.WithMaxWait(10*time.Second))
		res, err := w.TryAcquireElseWaitForRelease(context.Background())
		end := time.Now()
		if err != nil || res.Outcome != lockcore.Released || res.Fence != fence || res.ResultRef != "ref-holder" {
			t.Fatalf("waiter: %+v, %v; want RELEASED with the holder's success (fence %d)", res, err, fence)
		}
		if d := end.Sub(releasedAt); d < 0 || d > 2*lockcore.DefaultPollInterval {
			t.Errorf("waiter returned %v after the release, want within two poll intervals", d)
		}
	})
}
