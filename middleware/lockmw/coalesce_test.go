package lockmw

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/herdlock/herdlock/lockcore"
)

var coKey = lockcore.Key{Group: "g", ID: "EUR-USD"}

// TestCoalescerShares: followers that join while the leader runs get its
// publication when it lands, at that instant; later arrivals lead anew.
func TestCoalescerShares(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		co := newCoalescer()
		f, leader := co.join(coKey, time.Time{})
		if !leader {
			t.Fatal("join() of a new key: not the leader")
		}
		if other, lead := co.join(lockcore.Key{Group: "g", ID: "GBP-USD"}, time.Time{}); !lead || other == f {
			t.Fatal("join() of another key shares the flight")
		}
		const n = 16
		var wg sync.WaitGroup
		got := make([]publication, n)
		errs := make([]error, n)
		at := make([]time.Time, n)
		for i := range n {
			g, lead := co.join(coKey, time.Time{})
			if lead || g != f {
				t.Fatalf("join() %d: leader %v, want a follower of the flight", i, lead)
			}
			wg.Go(func() {
				got[i], errs[i] = g.wait(t.Context(), time.Now().Add(time.Minute))
				at[i] = time.Now()
			})
		}
		time.Sleep(3 * time.Second) // the leader's work
		landed := time.Now()
		f.land(publication{fence: 7, ref: "EUR-USD@7", answer: []byte(`{"rate":1}`)}, true)
		f.land(publication{fence: 8}, false) // no effect
		wg.Wait()
		for i := range n {
			if errs[i] != nil || got[i].fence != 7 || got[i].ref != "EUR-USD@7" || string(got[i].answer) != `{"rate":1}` {
				t.Errorf("follower %d: wait() = %+v, %v; want fence 7, the ref and the answer", i, got[i], errs[i])
			}
			if !at[i].Equal(landed) {
				t.Errorf("follower %d returned %v after the landing, want at once", i, at[i].Sub(landed))
			}
		}
		if _, lead := co.join(coKey, time.Time{}); !lead {
			t.Error("join() after the landing: a follower of a landed flight, want a new leader")
		}
	})
}

// TestCoalescerFallThrough: a leader that published no success sends its
// followers to the lock on their own.
func TestCoalescerFallThrough(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		co := newCoalescer()
		f, _ := co.join(coKey, time.Time{})
		g, _ := co.join(coKey, time.Time{})
		done := make(chan error, 1)
		go func() {
			_, err := g.wait(t.Context(), time.Time{})
			done <- err
		}()
		time.Sleep(time.Second)
		f.land(publication{}, false)
		if err := <-done; !errors.Is(err, errFallThrough) {
			t.Errorf("wait() = %v, want errFallThrough", err)
		}
	})
}

// TestCoalescerFollowerDeadline: each follower waits until its own limit,
// not the leader's, and then fails with ErrWaitTimeout; a cancelled
// context ends the wait with its cause.
func TestCoalescerFollowerDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		co := newCoalescer()
		f, _ := co.join(coKey, time.Time{})
		defer f.land(publication{}, false)
		g, _ := co.join(coKey, time.Time{})
		start := time.Now()
		_, err := g.wait(t.Context(), start.Add(2*time.Second))
		if !errors.Is(err, lockcore.ErrWaitTimeout) || time.Since(start) != 2*time.Second {
			t.Errorf("wait() = %v after %v, want ErrWaitTimeout after 2s", err, time.Since(start))
		}
		if _, err := g.wait(t.Context(), time.Now()); !errors.Is(err, lockcore.ErrWaitTimeout) {
			t.Errorf("wait() with no time left = %v, want ErrWaitTimeout", err)
		}
		cause := errors.New("invocation cancelled")
		ctx, cancel := context.WithCancelCause(t.Context())
		time.AfterFunc(time.Second, func() { cancel(cause) })
		if _, err := g.wait(ctx, time.Time{}); !errors.Is(err, cause) {
			t.Errorf("wait() with a cancelled context = %v, want its cause", err)
		}
	})
}

// TestCoalescerShortFollowerOfAWaitingLeader: an invocation whose wait
// ends before that of a leader still waiting on the store does not follow
// it; once the leader holds the lock, it does.
func TestCoalescerShortFollowerOfAWaitingLeader(t *testing.T) {
	now := time.Now()
	co := newCoalescer()
	f, _ := co.join(coKey, now.Add(10*time.Second))
	if g, lead := co.join(coKey, now.Add(5*time.Second)); g != nil || lead {
		t.Errorf("join() with an earlier limit while the leader waits = %p, %v; want nil, false", g, lead)
	}
	if g, lead := co.join(coKey, now.Add(10*time.Second)); g != f || lead {
		t.Errorf("join() with the leader's limit = %p, %v; want the flight, false", g, lead)
	}
	f.leaderHolds()
	if g, lead := co.join(coKey, now.Add(5*time.Second)); g != f || lead {
		t.Errorf("join() with an earlier limit while the leader holds = %p, %v; want the flight, false", g, lead)
	}
}
