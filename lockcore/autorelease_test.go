package lockcore_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/herdlock/herdlock/internal/faultstore"
	"github.com/herdlock/herdlock/lockcore"
)

// StoreCalls.AutoReleaseTimeout bounds the release the lock makes by
// itself at the maximum hold, and ReleaseTimeout the holder's own: against
// a store whose releases never answer, a hold that reaches its maximum is
// given up within the automatic budget, and a Release within its own.
func TestAutoReleaseTimeoutBoundsOnlyTheLocksOwnRelease(t *testing.T) {
	calls := lockcore.StoreCalls{ReleaseTimeout: 5 * time.Second, AutoReleaseTimeout: 300 * time.Millisecond}
	t.Run("the release at the maximum hold", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			store := faultstore.UnansweredReleases{Store: lockcore.NewMemoryStore()}
			l := newLock(t, store, "holder", lockcore.WithMaxHold(2*time.Second), lockcore.WithStoreCalls(calls))
			mustAcquire(t, l)
			start := time.Now()
			<-l.Context().Done() // the maximum hold ends the hold
			ended := time.Now()
			err := l.Release(context.Background(), lockcore.Success, "late") // returns the lock's own release's error
			if !errors.Is(err, lockcore.ErrMaxHoldReached) {
				t.Errorf("Release() after the maximum hold = %v; want ErrMaxHoldReached", err)
			}
			if got := time.Since(ended); got > calls.AutoReleaseTimeout {
				t.Errorf("the lock's own release took %v after the hold ended (%v after acquiring); want at most AutoReleaseTimeout %v", got, ended.Sub(start), calls.AutoReleaseTimeout)
			}
		})
	})
	t.Run("the holder's release", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			store := faultstore.UnansweredReleases{Store: lockcore.NewMemoryStore()}
			l := newLock(t, store, "holder", lockcore.WithStoreCalls(calls))
			mustAcquire(t, l)
			start := time.Now()
			err := l.Release(context.Background(), lockcore.Success, "ref")
			if !errors.Is(err, lockcore.ErrReleaseFailed) {
				t.Errorf("Release() = %v; want ErrReleaseFailed", err)
			}
			if got := time.Since(start); got != calls.ReleaseTimeout {
				t.Errorf("Release() took %v; want ReleaseTimeout %v, not AutoReleaseTimeout", got, calls.ReleaseTimeout)
			}
		})
	})
}
