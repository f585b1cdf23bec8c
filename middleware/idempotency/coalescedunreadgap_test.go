package idempotency_test

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/middleware/idempotency"
	"github.com/herdlock/herdlock/middleware/lockmw"
)

// A duplicate coalesced in the process behind a leader whose every store
// call a table throttled, with no record of the key, is not told that an
// invocation with the key is in progress: neither it nor its leader ever
// had the record. Its wait for the leader ends first (its deadline is
// half a second sooner) with no time left for a request of its own.
func TestCoalescedFollowerOfAnUnreadWaitIsNotInProgress(t *testing.T) {
	t.Skip("known gap: a follower whose in-process wait ends while its leader still waits on the store cannot tell whether the leader had the record; lockmw's in-process wait timeout never matches waitoutcome.ErrItemUnread, so it is ErrInProgress (409)")
	synctest.Test(t, func(t *testing.T) {
		store := &throttledStore{MemoryStore: lockcore.NewMemoryStore()}
		store.shut.Store(true)
		c := &counter{}
		h := wrap(t, c, store)
		leader := make(chan error, 1)
		go func() {
			_, err := invoke(t, h, 5500*time.Millisecond, order{Key: "k", Amount: 1})
			leader <- err
		}()
		synctest.Wait() // the leader waits on the store
		_, err := invoke(t, h, 5*time.Second, order{Key: "k", Amount: 1})
		lerr := <-leader
		if errors.Is(lerr, idempotency.ErrInProgress) {
			t.Fatalf("leader = %v; want not ErrInProgress (precondition)", lerr)
		}
		if errors.Is(err, idempotency.ErrInProgress) || !errors.Is(err, lockmw.ErrLockFailed) {
			t.Errorf("follower = %v; want lockmw.ErrLockFailed, not ErrInProgress", err)
		}
	})
}
