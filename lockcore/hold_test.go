package lockcore_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/lockcore/storeapi"
)

func TestAutoRenewalKeepsTheLeaseAlive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := lockcore.NewMemoryStore()
		m := &recMetrics{}
		l := newLock(t, store, "a", lockcore.WithLease(3*time.Second), lockcore.WithMetrics(m))
		mustAcquire(t, l)
		// Renewal every max(500ms, 1s) = 1s; stay 10 leases.
		time.Sleep(30*time.Second + 500*time.Millisecond)
		synctest.Wait()
		if !l.HasLock() || l.Context().Err() != nil {
			t.Fatalf("after 10 leases: HasLock %v, ctx err %v, want held", l.HasLock(), l.Context().Err())
		}
		it, _, _ := store.Get(context.Background(), l.Key())
		if it.Beat != 30 {
			t.Errorf("item Beat = %d, want 30 renewals", it.Beat)
		}
		mustRelease(t, l, lockcore.Success, "")
		if got := m.sum(lockcore.MetricLockRenewal); got != 30 {
			t.Errorf("LockRenewal metric = %v, want 30", got)
		}
		if got := m.sum(lockcore.MetricLockHoldDuration); got != 30500 {
			t.Errorf("LockHoldDuration = %vms, want 30500", got)
		}
	})
}

func TestLeaseLostWhenRenewalsFail(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := lockcore.NewMemoryStore()
		store := &hookStore{Store: mem, renew: failRenew}
		m := &recMetrics{}
		l := newLock(t, store, "a", lockcore.WithLease(3*time.Second), lockcore.WithMetrics(m))
		start := time.Now()
		mustAcquire(t, l)
		<-l.Context().Done()
		// Validity = send time + lease - max(100ms, 2% lease) = 2.9s.
		if got := time.Since(start); got != 2900*time.Millisecond {
			t.Errorf("context cancelled after %v, want 2.9s", got)
		}
		if cause := context.Cause(l.Context()); !errors.Is(cause, lockcore.ErrLeaseLost) {
			t.Errorf("cause = %v, want ErrLeaseLost", cause)
		}
		synctest.Wait()
		if l.HasLock() || l.Valid() {
			t.Errorf("HasLock %v Valid %v after lease lost, want false", l.HasLock(), l.Valid())
		}
		if m.sum(lockcore.MetricLeaseLost) != 1 {
			t.Errorf("LockLeaseLost = %v, want 1", m.sum(lockcore.MetricLeaseLost))
		}
		// The keeper released the item as a failure, so a waiter takes over.
		it, _, _ := mem.Get(context.Background(), l.Key())
		if !it.Released || it.Result != lockcore.Failure {
			t.Errorf("item released %v result %q, want released failure", it.Released, it.Result)
		}
		if store.n("renew") < 2 {
			t.Errorf("renew attempts = %d, want retries before the lease ran out", store.n("renew"))
		}
	})
}

func TestRenewalSeesTakeOver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := lockcore.NewMemoryStore()
		l := newLock(t, store, "a", lockcore.WithLease(3*time.Second))
		mustAcquire(t, l)
		it, _, _ := store.Get(context.Background(), l.Key())
		_, err := store.Acquire(context.Background(), storeapi.AcquireRequest{Key: l.Key(), Revision: "thief",
			Lease: time.Second, Observed: &storeapi.Observation{Revision: it.Revision, Beat: it.Beat}})
		if err != nil {
			t.Fatal(err)
		}
		<-l.Context().Done()
		if cause := context.Cause(l.Context()); !errors.Is(cause, lockcore.ErrLeaseLost) {
			t.Errorf("cause = %v, want ErrLeaseLost", cause)
		}
		synctest.Wait()
		got, _, _ := store.Get(context.Background(), l.Key())
		if got.Revision != "thief" || got.Released {
			t.Errorf("item = %+v, want the thief's unreleased hold untouched", got)
		}
		if err := l.Renew(context.Background()); !errors.Is(err, lockcore.ErrNotHeld) {
			t.Errorf("Renew() after loss = %v, want ErrNotHeld", err)
		}
	})
}

func TestManualRenew(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := lockcore.NewMemoryStore()
		l := newLock(t, store, "a")
		if err := l.Renew(context.Background()); !errors.Is(err, lockcore.ErrNotHeld) {
			t.Errorf("Renew() before Acquire = %v, want ErrNotHeld", err)
		}
		mustAcquire(t, l)
		l.CancelAutoRenewal()
		if l.HasRenewal() {
			t.Error("HasRenewal() after CancelAutoRenewal = true")
		}
		if err := l.Renew(context.Background()); err != nil {
			t.Fatalf("Renew() error = %v", err)
		}
		it, _, _ := store.Get(context.Background(), l.Key())
		if it.Beat != 1 {
			t.Errorf("Beat = %d, want 1", it.Beat)
		}
		mustRelease(t, l, lockcore.Success, "")
	})
}

func TestMaximumHold(t *testing.T) {
	tests := []struct {
		name      string
		maxHold   time.Duration
		remaining time.Duration // 0: no RemainingTime
		want      time.Duration
	}{
		{"option", 4 * time.Second, 0, 4 * time.Second},
		{"remaining time is shorter", time.Minute, 5 * time.Second, 5 * time.Second},
		{"option is shorter", 3 * time.Second, time.Minute, 3 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				store := lockcore.NewMemoryStore()
				m := &recMetrics{}
				p := params("a")
				if tt.remaining > 0 {
					end := time.Now().Add(tt.remaining)
					p.RemainingTime = func() time.Duration { return time.Until(end) }
				}
				l, err := lockcore.New(store, p, lockcore.WithLogger(quiet), lockcore.WithMaxHold(tt.maxHold),
					lockcore.WithLease(2*time.Second), lockcore.WithMetrics(m))
				if err != nil {
					t.Fatal(err)
				}
				start := time.Now()
				mustAcquire(t, l)
				it, _, _ := store.Get(context.Background(), l.Key())
				if got := time.Duration(it.ExpiresAtMs-it.HeartbeatAtMs) * time.Millisecond; got != tt.want {
					t.Errorf("stored hard maximum = %v, want %v", got, tt.want)
				}
				<-l.Context().Done()
				// The holder stops ρ·maxHold early (default ρ = 1%), so a
				// slow clock still stops before the stored maximum.
				if got, want := time.Since(start), tt.want-tt.want/100; got != want {
					t.Errorf("cancelled after %v, want %v", got, want)
				}
				if cause := context.Cause(l.Context()); !errors.Is(cause, lockcore.ErrMaxHoldReached) {
					t.Errorf("cause = %v, want ErrMaxHoldReached", cause)
				}
				synctest.Wait()
				it, _, _ = store.Get(context.Background(), l.Key())
				if !it.Released || it.Result != lockcore.Failure || m.sum(lockcore.MetricLockTimeout) != 1 {
					t.Errorf("after timeout: released %v result %q LockTimeout %v, want released failure and 1",
						it.Released, it.Result, m.sum(lockcore.MetricLockTimeout))
				}
			})
		})
	}
}

func TestCancelAutoRenewalLetsTheLeaseLapse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := lockcore.NewMemoryStore()
		l := newLock(t, store, "a", lockcore.WithLease(2*time.Second))
		mustAcquire(t, l)
		l.CancelAutoRenewal()
		if l.HasRenewal() {
			t.Error("HasRenewal() after CancelAutoRenewal = true")
		}
		start := time.Now()
		<-l.Context().Done()
		if got := time.Since(start); got != 1900*time.Millisecond {
			t.Errorf("cancelled after %v, want 1.9s (lease minus margin)", got)
		}
	})
}

func TestTriggerAbort(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := lockcore.NewMemoryStore()
		l := newLock(t, store, "a")
		mustAcquire(t, l)
		l.TriggerAbort()
		if cause := context.Cause(l.Context()); !errors.Is(cause, lockcore.ErrAborted) {
			t.Errorf("cause = %v, want ErrAborted", cause)
		}
		if !l.HasLock() {
			t.Error("HasLock() after TriggerAbort = false, want true until Release")
		}
		mustRelease(t, l, lockcore.Failure, "")
		if l.HasLock() {
			t.Error("HasLock() after Release = true")
		}
	})
}

func TestParentContextEndReleases(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := lockcore.NewMemoryStore()
		l := newLock(t, store, "a")
		ctx, cancel := context.WithCancelCause(context.Background())
		if ok, err := l.Acquire(ctx); !ok || err != nil {
			t.Fatalf("Acquire() = %v, %v", ok, err)
		}
		stop := errors.New("invocation over")
		cancel(stop)
		<-l.Context().Done()
		synctest.Wait()
		if cause := context.Cause(l.Context()); !errors.Is(cause, stop) {
			t.Errorf("cause = %v, want the parent's cause", cause)
		}
		it, _, _ := store.Get(context.Background(), l.Key())
		if !it.Released || it.Result != lockcore.Failure || l.HasLock() {
			t.Errorf("item released %v result %q HasLock %v, want released failure, not held", it.Released, it.Result, l.HasLock())
		}
	})
}

func TestRenewalTimeIsMeasuredFromSend(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := lockcore.NewMemoryStore()
		m := &recMetrics{}
		// Each renewal takes 1.2s to answer: longer than the 1s interval, yet
		// each answer lands before the validity its send time gives.
		store := &hookStore{Store: mem, renew: func(ctx context.Context, req storeapi.RenewRequest) (storeapi.Item, error) {
			time.Sleep(1200 * time.Millisecond)
			return mem.Renew(ctx, req)
		}}
		// The attempt timeout must let a 1.2s answer in.
		l := newLock(t, store, "a", lockcore.WithLease(3*time.Second), lockcore.WithMetrics(m), lockcore.WithStoreCalls(lockcore.StoreCalls{AttemptTimeout: 1500 * time.Millisecond}))
		mustAcquire(t, l)
		time.Sleep(10 * time.Second)
		if !l.HasLock() {
			t.Fatal("lost the lock with slow but successful renewals")
		}
		if m.sum(lockcore.MetricLongRenewalCall) == 0 {
			t.Error("LongRenewalCall not counted")
		}
		mustRelease(t, l, lockcore.Success, "")
	})
}
