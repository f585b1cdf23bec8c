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

// An operator's force-release (herdlock release --revision R: one Failure
// release conditioned on the holder's revision) stops the running holder at
// its next renewal: its context is cancelled with ErrLeaseLost, Valid is
// false at once, and it writes nothing more, so the operator's release
// stands and a newcomer takes over at once.
func TestForceReleaseStopsTheHolderAtItsNextRenewal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := lockcore.NewMemoryStore()
		store := &hookStore{Store: mem}
		m := &recMetrics{}
		l := newLock(t, store, "holder", lockcore.WithLease(6*time.Second), lockcore.WithMetrics(m))
		mustAcquire(t, l)
		it, _, _ := mem.Get(context.Background(), l.Key())
		op, err := mem.Release(context.Background(), storeapi.ReleaseRequest{
			Key: l.Key(), Revision: it.Revision, NowMs: it.HeartbeatAtMs + 100, Result: lockcore.Failure,
			Failures: it.Failures, FailReason: "operator_release",
		})
		if err != nil {
			t.Fatalf("operator Release() = %v", err)
		}

		// The next renewal is due after lease/3 = 2s.
		time.Sleep(2*time.Second + time.Millisecond)
		synctest.Wait()
		if l.Valid() || l.HasLock() {
			t.Errorf("after the next renewal: Valid %v, HasLock %v, want false", l.Valid(), l.HasLock())
		}
		if cause := context.Cause(l.Context()); !errors.Is(cause, lockcore.ErrLeaseLost) {
			t.Errorf("holder's context cause = %v, want ErrLeaseLost", cause)
		}
		renews := store.n("renew")
		if renews != 1 {
			t.Errorf("renewals = %d, want 1: a renewal refused on our released revision is not retried", renews)
		}
		err = l.Release(context.Background(), lockcore.Success, "ref")
		if !errors.Is(err, lockcore.ErrLeaseLost) {
			t.Errorf("holder's Release() = %v, want an error matching ErrLeaseLost", err)
		}
		time.Sleep(10 * time.Second) // past the lease: nothing is written by the keeper either
		synctest.Wait()
		if n := store.n("release"); n != 0 {
			t.Errorf("holder's release writes = %d, want 0", n)
		}
		if n := store.n("renew"); n != renews {
			t.Errorf("renewals after the refusal = %d, want none", n-renews)
		}
		if got, _, _ := mem.Get(context.Background(), l.Key()); !got.Equal(op) {
			t.Errorf("item = %+v, want the operator's release %+v unchanged", got, op)
		}
		if got := m.sum(lockcore.MetricLeaseLost); got != 1 {
			t.Errorf("LockLeaseLost = %v, want 1", got)
		}

		// The next caller takes over at once: no failure window holds it back.
		next := newLock(t, mem, "next")
		res, err := next.TryAcquireElseWaitForRelease(context.Background())
		if err != nil || res.Outcome != lockcore.Acquired {
			t.Errorf("newcomer = %v, %v, want ACQUIRED", res.Outcome, err)
		}
		mustRelease(t, next, lockcore.Success, "")
	})
}

// A holder that releases after an operator's force-release, before any
// renewal told it, publishes nothing over it: its Release, with Failure
// (reason of its own, or none) or Success, is refused with ErrLeaseLost,
// and the item stays the operator's release, which a newcomer takes over
// at once. A holder given the operator's reason does not pass for the
// operator.
func TestReleaseAfterForceReleaseWritesNothingOverIt(t *testing.T) {
	releases := []struct {
		name   string
		result lockcore.Result
		opts   []lockcore.ReleaseOption
	}{
		{"failure", lockcore.Failure, []lockcore.ReleaseOption{lockcore.WithFailureReason("upstream_503")}},
		{"failure with a not-before", lockcore.Failure, []lockcore.ReleaseOption{lockcore.WithNotBefore(time.Now().Add(time.Hour))}},
		{"failure with the operator's reason", lockcore.Failure, []lockcore.ReleaseOption{lockcore.WithFailureReason(storeapi.OperatorReleaseReason)}},
		{"success", lockcore.Success, nil},
	}
	for _, tt := range releases {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				mem := lockcore.NewMemoryStore()
				m := &recMetrics{}
				l := newLock(t, mem, "holder", lockcore.WithLease(6*time.Second), lockcore.WithMetrics(m))
				mustAcquire(t, l)
				it, _, _ := mem.Get(context.Background(), l.Key())
				op, err := mem.Release(context.Background(), storeapi.ReleaseRequest{
					Key: l.Key(), Revision: it.Revision, NowMs: it.HeartbeatAtMs + 100, Result: lockcore.Failure,
					Failures: it.Failures, FailReason: storeapi.OperatorReleaseReason,
				})
				if err != nil {
					t.Fatalf("operator Release() = %v", err)
				}
				err = l.Release(context.Background(), tt.result, "ref", tt.opts...)
				if !errors.Is(err, lockcore.ErrLeaseLost) {
					t.Errorf("holder's Release() = %v, want an error matching ErrLeaseLost", err)
				}
				if l.Valid() || l.HasLock() {
					t.Errorf("after Release: Valid %v, HasLock %v, want false", l.Valid(), l.HasLock())
				}
				if got, _, _ := mem.Get(context.Background(), l.Key()); !got.Equal(op) {
					t.Errorf("item = %+v, want the operator's release %+v unchanged", got, op)
				}
				if got := m.sum(lockcore.MetricLeaseLost); got != 1 {
					t.Errorf("LockLeaseLost = %v, want 1", got)
				}
				next := newLock(t, mem, "next")
				res, err := next.TryAcquireElseWaitForRelease(context.Background())
				if err != nil || res.Outcome != lockcore.Acquired {
					t.Errorf("newcomer = %v, %v, want ACQUIRED", res.Outcome, err)
				}
				mustRelease(t, next, lockcore.Success, "")
			})
		})
	}
}

// The same after a newcomer acquired over the operator's release, before
// the stopped holder released, and after the newcomer has released too,
// with a failure reason of its own: the holder is told ErrLeaseLost
// whatever it publishes (its failure release is not taken for the retry of
// one that was applied), and the newcomer's item is untouched.
func TestReleaseAfterForceReleaseAndANewcomer(t *testing.T) {
	for _, result := range []lockcore.Result{lockcore.Failure, lockcore.Success} {
		for _, newcomerDone := range []bool{false, true} {
			name := string(result)
			if newcomerDone {
				name += "/newcomer released"
			}
			t.Run(name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					mem := lockcore.NewMemoryStore()
					m := &recMetrics{}
					l := newLock(t, mem, "holder", lockcore.WithLease(6*time.Second), lockcore.WithMetrics(m))
					mustAcquire(t, l)
					forceRelease(t, mem, l.Key())
					next := newLock(t, mem, "next")
					mustAcquire(t, next)
					if newcomerDone {
						// The newcomer's own failure replaces the item's
						// reason; the operator's stays the replaced one.
						if err := next.Release(context.Background(), lockcore.Failure, "", lockcore.WithFailureReason("upstream_500")); err != nil {
							t.Fatalf("newcomer's Release() = %v", err)
						}
					}
					held, _, _ := mem.Get(context.Background(), l.Key())

					err := l.Release(context.Background(), result, "ref", lockcore.WithFailureReason("upstream_503"))
					if !errors.Is(err, lockcore.ErrLeaseLost) {
						t.Errorf("holder's Release(%s) = %v, want an error matching ErrLeaseLost", result, err)
					}
					if got := m.sum(lockcore.MetricLeaseLost); got != 1 {
						t.Errorf("LockLeaseLost = %v, want 1", got)
					}
					if got, _, _ := mem.Get(context.Background(), l.Key()); !got.Equal(held) || !newcomerDone && !next.Valid() {
						t.Errorf("item = %+v, newcomer valid %v; want the newcomer's item %+v unchanged", got, next.Valid(), held)
					}
					if !newcomerDone {
						mustRelease(t, next, lockcore.Success, "")
					}
				})
			})
		}
	}
}

// An operator's force-release in the last stretch of a hold, where the
// holder's validity has reached the hard maximum and no renewal can extend
// it (after renewals got there, or from the start when the invocation's
// remaining time is below the lease, as in Lambda), is still seen within a
// renewal interval: the holder's context is cancelled with ErrLeaseLost,
// not ErrMaxHoldReached later, so the holder and the newcomer that took
// the released lock are both Valid for at most one renewal interval, and
// the holder writes nothing over the newcomer. A force-release within the
// last interval before the hard maximum ends the hold at that maximum,
// still within the interval.
func TestForceReleaseNearTheMaximumHoldIsSeenWithinARenewalInterval(t *testing.T) {
	const lease, interval, epsilon = 6 * time.Second, 2 * time.Second, 10 * time.Millisecond
	tests := []struct {
		name         string
		maxHold      time.Duration
		remaining    time.Duration // 0: no Params.RemainingTime
		forceAt      time.Duration // after the acquire
		wantCause    error
		wantTimeouts float64 // LockTimeout
	}{
		// Renewals at 2s, 4s, 6s; the one at 6s reaches the maximum (9.9s).
		{"just after the renewal that reached the maximum", 10 * time.Second, 0, 6*time.Second + time.Millisecond, lockcore.ErrLeaseLost, 0},
		{"midway to the maximum", 10 * time.Second, 0, 7 * time.Second, lockcore.ErrLeaseLost, 0},
		// Validity is the maximum (4.95s) from the acquire: no renewal ever.
		{"remaining time below the lease", time.Minute, 5 * time.Second, time.Millisecond, lockcore.ErrLeaseLost, 0},
		{"remaining time below the lease, later", time.Minute, 5 * time.Second, 2*time.Second + time.Millisecond, lockcore.ErrLeaseLost, 0},
		{"within the last interval", time.Minute, 5 * time.Second, 4*time.Second + time.Millisecond, lockcore.ErrMaxHoldReached, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				mem := lockcore.NewMemoryStore()
				store := &hookStore{Store: mem}
				m := &recMetrics{}
				p := params("holder")
				if tt.remaining > 0 {
					end := time.Now().Add(tt.remaining)
					p.RemainingTime = func() time.Duration { return time.Until(end) }
				}
				holder, err := lockcore.New(store, p, lockcore.WithLogger(quiet), lockcore.WithLease(lease),
					lockcore.WithMaxHold(tt.maxHold), lockcore.WithMetrics(m))
				if err != nil {
					t.Fatal(err)
				}
				mustAcquire(t, holder)
				time.Sleep(tt.forceAt)
				forceRelease(t, mem, holder.Key())
				forced := time.Now()
				next := newLock(t, mem, "newcomer", lockcore.WithLease(lease))
				if res, err := next.TryAcquireElseWaitForRelease(context.Background()); err != nil || res.Outcome != lockcore.Acquired {
					t.Fatalf("newcomer = %v, %v, want ACQUIRED at once", res.Outcome, err)
				}
				held, _, _ := mem.Get(context.Background(), next.Key())

				<-holder.Context().Done()
				if both := time.Since(forced); both > interval+epsilon {
					t.Errorf("holder valid %v after the force-release, with the newcomer holding; want at most a renewal interval (%v)", both, interval)
				}
				if holder.Valid() || !next.Valid() {
					t.Errorf("when the holder stopped: holder valid %v, newcomer valid %v; want false, true", holder.Valid(), next.Valid())
				}
				if cause := context.Cause(holder.Context()); !errors.Is(cause, tt.wantCause) {
					t.Errorf("holder's context cause = %v, want %v", cause, tt.wantCause)
				}
				if err := holder.Release(context.Background(), lockcore.Success, "ref"); !errors.Is(err, tt.wantCause) {
					t.Errorf("holder's Release() = %v, want an error matching %v", err, tt.wantCause)
				}
				synctest.Wait()
				if got := m.sum(lockcore.MetricLockTimeout); got != tt.wantTimeouts {
					t.Errorf("LockTimeout = %v, want %v", got, tt.wantTimeouts)
				}
				if got, _, _ := mem.Get(context.Background(), next.Key()); got.Revision != held.Revision || got.Released {
					t.Errorf("item = %+v, want the newcomer's hold (revision %q) untouched by the stopped holder", got, held.Revision)
				}
				mustRelease(t, next, lockcore.Success, "")
			})
		})
	}
}

// The same on DynamoDB's API (Dynoxide, dynalite) as on the memory store,
// in real time: a holder whose remaining time (2s) is below its lease (3s)
// is at its hard maximum from the acquire, and its first check (after the
// renewal interval, 1s) reads the operator's release through the store's
// strongly consistent read: its context ends with ErrLeaseLost, well
// before the maximum, while the newcomer holds.
func TestForceReleaseNearTheMaximumHoldOnEveryStore(t *testing.T) {
	for _, st := range everyStore() {
		t.Run(st.name, func(t *testing.T) {
			inner := st.new(t)
			p := params("holder")
			end := time.Now().Add(2 * time.Second)
			p.RemainingTime = func() time.Duration { return time.Until(end) }
			holder, err := lockcore.New(inner, p, lockcore.WithLogger(quiet), lockcore.WithLease(3*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			mustAcquire(t, holder)
			forceRelease(t, inner, holder.Key())
			next := newLock(t, inner, "newcomer")
			mustAcquire(t, next)

			<-holder.Context().Done()
			if cause := context.Cause(holder.Context()); !errors.Is(cause, lockcore.ErrLeaseLost) {
				t.Errorf("holder's context cause = %v, want ErrLeaseLost (its check saw the force-release)", cause)
			}
			if !next.Valid() {
				t.Error("the newcomer's hold is not valid")
			}
			mustRelease(t, next, lockcore.Success, "")
			_ = holder.Release(context.Background(), lockcore.Failure, "")
		})
	}
}

// A holder at its hard maximum only checks the item, and keeps the
// renewal pace while the store throttles or fails those reads: nothing
// but seeing a force-release is at stake, and the herd that makes the
// store throttle is reading the same item. A holder whose remaining time
// (5s) is below its lease (6s) checks at 2s and 4s, each throttled; it
// stays valid until its maximum, which ends it (ErrMaxHoldReached), with
// about two reads, not one every 10-100ms.
func TestThrottledChecksAtTheMaximumHoldKeepTheRenewalPace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := lockcore.NewMemoryStore()
		store := &hookStore{Store: mem, get: func(context.Context, lockcore.Key) (storeapi.Item, bool, error) {
			return storeapi.Item{}, false, errThrottle
		}}
		p := params("holder")
		end := time.Now().Add(5 * time.Second)
		p.RemainingTime = func() time.Duration { return time.Until(end) }
		holder, err := lockcore.New(store, p, lockcore.WithLogger(quiet), lockcore.WithLease(6*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		mustAcquire(t, holder) // no read: the acquire is a write

		<-holder.Context().Done()
		if cause := context.Cause(holder.Context()); !errors.Is(cause, lockcore.ErrMaxHoldReached) {
			t.Errorf("holder's context cause = %v, want ErrMaxHoldReached: throttled checks lose nothing", cause)
		}
		if held := time.Since(start); held < 4900*time.Millisecond {
			t.Errorf("holder stopped after %v, want at its maximum (4.95s)", held)
		}
		if n := store.n("get"); n > 3 {
			t.Errorf("checks = %d, want at most 3 (one per renewal interval of 2s)", n)
		}
		_ = holder.Release(context.Background(), lockcore.Failure, "")
	})
}
