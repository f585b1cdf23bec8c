package lockcore_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/lockcore/storeapi"
)

// TestHolderNeverOutlivesTheStoredItem (#11 defect 2): whatever CancelAutoRenewal or nothing was
// called, at the first moment another acquirer (wall clock on) succeeds,
// the old holder's context is already cancelled.
func TestHolderNeverOutlivesTheStoredItem(t *testing.T) {
	tests := []struct {
		name   string
		cancel func(*lockcore.Lock)
	}{
		{"nothing cancelled", func(*lockcore.Lock) {}},
		{"CancelAutoRenewal", (*lockcore.Lock).CancelAutoRenewal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				mem := lockcore.NewMemoryStore()
				holder := newLock(t, mem, "h", lockcore.WithLease(time.Second), lockcore.WithMaxHold(2*time.Second))
				mustAcquire(t, holder)
				tt.cancel(holder)
				newcomer := newLock(t, mem, "n", lockcore.WithLease(time.Second))
				start := time.Now()
				for time.Since(start) < 10*time.Second {
					time.Sleep(10 * time.Millisecond)
					ok, err := newcomer.Acquire(context.Background())
					if err != nil {
						t.Fatalf("newcomer Acquire() = %v", err)
					}
					if !ok {
						continue
					}
					if holder.Context().Err() == nil || holder.Valid() {
						t.Fatalf("at %v a newcomer acquired while the old holder's context was live", time.Since(start))
					}
					mustRelease(t, newcomer, lockcore.Success, "")
					return
				}
				t.Fatal("no newcomer acquired within 10s of a 2s hard maximum")
			})
		})
	}
}

// slowClock runs at rate times real speed from the moment it is made.
type slowClock struct {
	base time.Time
	rate float64
}

func (c slowClock) Now() time.Time {
	return c.base.Add(time.Duration(float64(time.Since(c.base)) * c.rate))
}

// lineCounter is a slog handler's output that counts lines containing a
// substring.
type lineCounter struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (c *lineCounter) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.Write(p)
}

func (c *lineCounter) count(sub string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, line := range strings.Split(c.buf.String(), "\n") {
		if strings.Contains(line, sub) {
			n++
		}
	}
	return n
}

// TestRenewalsStopAtTheHardMaximum (#11 defect 3): near the hard maximum,
// where no renewal can extend the stored lease, the holder does not send
// one again and again: with a wall clock running 1% slow (whose capped
// lease ends drift below the stored one), it renews about once per renewal
// interval until its validity reaches the hard maximum, then stops, and
// logs no warning.
func TestRenewalsStopAtTheHardMaximum(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := lockcore.NewMemoryStore()
		store := &hookStore{Store: mem}
		logs := &lineCounter{}
		l, err := lockcore.New(store, params("a"), lockcore.WithLease(time.Second), lockcore.WithMaxHold(5*time.Second),
			lockcore.WithClocks(lockcore.Clocks{Wall: slowClock{base: time.Now(), rate: 0.99}}),
			lockcore.WithLogger(slog.New(slog.NewTextHandler(logs, nil))))
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		mustAcquire(t, l)
		<-l.Context().Done()
		if got, want := time.Since(start), 5*time.Second-50*time.Millisecond; got != want {
			t.Errorf("held for %v, want %v (the hard maximum less ρ)", got, want)
		}
		if cause := context.Cause(l.Context()); !errors.Is(cause, lockcore.ErrMaxHoldReached) {
			t.Errorf("cause = %v, want ErrMaxHoldReached", cause)
		}
		// Every 500ms while validity (sent + 900ms) is short of 4.95s: the
		// renewals sent at 0.5s, 1s, ..., 4.5s.
		if got := store.n("renew"); got != 9 {
			t.Errorf("renewals = %d, want 9", got)
		}
		if n := logs.count("renew"); n > 0 {
			t.Errorf("%d log lines about renewals, want none:\n%s", n, logs.buf.String())
		}
		it, _, _ := mem.Get(context.Background(), l.Key())
		if it.LeaseUntilMs > it.ExpiresAtMs {
			t.Errorf("stored lease until %d, past the stored hard maximum %d", it.LeaseUntilMs, it.ExpiresAtMs)
		}
	})
}

// steppedClock is the real clock, stepped back by step after at.
type steppedClock struct {
	at   time.Time
	step time.Duration
}

func (c steppedClock) Now() time.Time {
	if now := time.Now(); now.Before(c.at) {
		return now
	}
	return time.Now().Add(-c.step)
}

// TestClockStepBackKeepsAHealthyHolder (#11 defect 8): after its wall clock
// steps back by more than the lease, a holder keeps its lock: its renewals
// cannot extend the stored lease, but they still move the beat, so a
// clock-free waiter sees it alive and its own validity goes on.
func TestClockStepBackKeepsAHealthyHolder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := lockcore.NewMemoryStore()
		clock := steppedClock{at: time.Now().Add(3 * time.Second), step: 5 * time.Second}
		holder := newLock(t, mem, "h", lockcore.WithLease(2*time.Second), lockcore.WithClocks(lockcore.Clocks{Wall: clock}))
		mustAcquire(t, holder)
		w := newLock(t, mem, "w", lockcore.WithLease(2*time.Second), lockcore.WithClocks(lockcore.Clocks{NoWallClockPath: true}), lockcore.WithMaxWait(15*time.Second))
		res, err := w.TryAcquireElseWaitForRelease(context.Background())
		if res.Outcome != lockcore.Failed || !errors.Is(err, lockcore.ErrWaitTimeout) {
			t.Errorf("clock-free waiter = %+v, %v, want FAILED (timed out): the holder is alive", res, err)
		}
		if !holder.HasLock() || holder.Context().Err() != nil {
			t.Fatalf("holder lost its lock after its clock stepped back: %v", context.Cause(holder.Context()))
		}
		it, _, _ := mem.Get(context.Background(), holder.Key())
		if it.Beat < 20 {
			t.Errorf("beat = %d after 15s of renewals every 667ms, want at least 20: the beat must move after the step", it.Beat)
		}
		mustRelease(t, holder, lockcore.Success, "")
	})
}

// TestGhostAcquireAtTheWaitDeadlineIsFreed (#11 defect 7): a take-over
// whose write is applied but whose answer does not come before the wait's
// deadline is resolved and freed on a budget of its own, so the item is not
// left held by nobody.
func TestGhostAcquireAtTheWaitDeadlineIsFreed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := lockcore.NewMemoryStore()
		reap := crashHolder(t, mem, time.Second)
		defer reap()
		store := &hookStore{Store: mem}
		var ghost string
		store.acquire = func(ctx context.Context, req storeapi.AcquireRequest) (storeapi.Item, error) {
			it, err := mem.Acquire(ctx, req)
			if err != nil {
				return it, err
			}
			ghost = req.Revision
			<-ctx.Done() // applied; the answer never comes
			return storeapi.Item{}, ctx.Err()
		}
		w := newLock(t, store, "w", lockcore.WithLease(time.Second), lockcore.WithMaxWait(3*time.Second))
		res, err := w.TryAcquireElseWaitForRelease(context.Background())
		if res.Outcome != lockcore.Failed || err == nil || w.HasLock() {
			t.Fatalf("TryAcquireElseWaitForRelease() = %+v, %v, HasLock %v; want FAILED, not held", res, err, w.HasLock())
		}
		it, _, _ := mem.Get(context.Background(), w.Key())
		if ghost == "" || it.Revision != ghost || !it.Released || it.Result != lockcore.Failure {
			t.Fatalf("item = revision %q released %v result %q, want the ghost %q freed", it.Revision, it.Released, it.Result, ghost)
		}
		next := newLock(t, mem, "next")
		if ok, err := next.Acquire(context.Background()); !ok || err != nil {
			t.Errorf("next Acquire() = %v, %v, want the lock free at once", ok, err)
		}
		mustRelease(t, next, lockcore.Success, "")
	})
}
