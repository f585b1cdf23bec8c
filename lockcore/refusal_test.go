package lockcore_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"

	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/lockcore/storeapi"
)

// A renewal that the store refuses is tried again on the renewal schedule
// only, not every few milliseconds: over a 6 s lease whose renewals are
// all refused the holder sends at most three, and loses its lease at its
// validity.
func TestRefusedRenewalKeepsItsSchedule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &hookStore{Store: lockcore.NewMemoryStore(), renew: func(context.Context, storeapi.RenewRequest) (storeapi.Item, error) {
			return storeapi.Item{}, fmt.Errorf("memory renew: refused by the store: AccessDeniedException: %w", lockcore.ErrStoreRefused)
		}}
		l := newLock(t, store, "holder")
		mustAcquire(t, l)
		<-l.Context().Done()
		if cause := context.Cause(l.Context()); !errors.Is(cause, lockcore.ErrLeaseLost) {
			t.Errorf("holder's context ended with %v, want ErrLeaseLost", cause)
		}
		if n := store.n("renew"); n > 3 {
			t.Errorf("renewals sent = %d, want at most 3 (one per renewal interval)", n)
		}
		_ = l.Release(context.Background(), lockcore.Success, "ref")
	})
}
