package idempotency_test

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/middleware/idempotency"
)

// A duplicate coalesced in the process behind a leader that read the
// record in progress (held by an invocation in another process), and
// which then waits on its own as a waiter on the store that waited as
// long, is ErrInProgress, as such a waiter is, even when every call of
// its own was throttled: the process read the record held.
func TestCoalescedFollowerOfALeaderThatReadTheRecordIsInProgress(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &throttledStore{MemoryStore: lockcore.NewMemoryStore()}
		holder := &counter{block: make(chan struct{}), started: make(chan struct{}, 1)}
		first := make(chan struct{})
		go func() {
			defer close(first)
			_, _ = invoke(t, wrap(t, holder, store), time.Minute, order{Key: "k", Amount: 1})
		}()
		<-holder.started
		c := &counter{}
		h := wrap(t, c, store) // another process
		leader := make(chan error, 1)
		go func() {
			_, err := invoke(t, h, 5*time.Second, order{Key: "k", Amount: 1})
			leader <- err
		}()
		synctest.Wait() // the leader has read the record in progress
		follower := make(chan error, 1)
		go func() {
			_, err := invoke(t, h, 8*time.Second, order{Key: "k", Amount: 1})
			follower <- err
		}()
		synctest.Wait()
		time.Sleep(time.Second)
		store.shut.Store(true)
		lerr, err := <-leader, <-follower
		store.shut.Store(false)
		close(holder.block)
		<-first
		if !errors.Is(lerr, idempotency.ErrInProgress) {
			t.Fatalf("leader = %v; want ErrInProgress (precondition)", lerr)
		}
		if !errors.Is(err, idempotency.ErrInProgress) {
			t.Errorf("follower = %v; want ErrInProgress", err)
		}
	})
}
