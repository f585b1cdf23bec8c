package lockmw_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/lockcore/storeapi"
	"github.com/herdlock/herdlock/middleware/lockmw"
)

// TestCoalescedFollowerArrivingAfterAnOldSuccess: another holder publishes
// success at 1 s while the leader waits on the store, reading it only
// every 10 s; an invocation that arrives at 3 s, when that success is older
// than the 1 s fresh-success window, finds the lock free on the store and
// acquires it, as the window says. A follower that arrives then must not
// be RELEASED with that success when the leader reads it later: it is
// told what a waiter on the store arriving then is told.
func TestCoalescedFollowerArrivingAfterAnOldSuccess(t *testing.T) {
	tests := []struct {
		name     string
		coalesce bool
	}{
		{"waiting on the store", false},
		{"coalesced", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				mem := lockcore.NewMemoryStore()
				other := holdElsewhere(t, context.Background(), mem, "EUR-USD")
				otherFence := other.Fence()
				time.AfterFunc(time.Second, func() {
					if err := other.Release(context.Background(), lockcore.Success, "ref-old"); err != nil {
						t.Errorf("other holder's release: %v", err)
					}
				})
				hd := &coalescedHerd{n: 2, work: time.Second, store: &opCounter{Store: mem},
					arrive: func(i int) time.Duration { return []time.Duration{0, 3 * time.Second}[i] },
					opts: []lockmw.Option{coalescing(tt.coalesce), lockmw.WithLockOptions(
						lockcore.WithFreshSuccess(time.Second), lockcore.WithPollInterval(10*time.Second))}}
				hd.run(t)
				if got := hd.infos[0]; hd.errs[0] != nil || got.Outcome != lockcore.Released || got.Fence < otherFence {
					t.Errorf("invocation 0: %+v, %v; want RELEASED with a success at fence %d or later", got, hd.errs[0], otherFence)
				}
				if got := hd.infos[1]; hd.errs[1] != nil || got.Outcome != lockcore.Acquired || got.Coalesced {
					t.Errorf("invocation 1, arriving 2 s after the success: %+v, %v; want ACQUIRED, as the fresh-success window says", got, hd.errs[1])
				}
			})
		})
	}
}

// rttStore answers every lock request a round trip after the store
// applied it, as a network does.
type rttStore struct {
	storeapi.Store
	rtt time.Duration
}

func (s *rttStore) Acquire(ctx context.Context, req storeapi.AcquireRequest) (storeapi.Item, error) {
	it, err := s.Store.Acquire(ctx, req)
	time.Sleep(s.rtt)
	return it, err
}

func (s *rttStore) Get(ctx context.Context, key lockcore.Key) (storeapi.Item, bool, error) {
	it, found, err := s.Store.Get(ctx, key)
	time.Sleep(s.rtt)
	return it, found, err
}

// TestCoalescedBurstOnAFreshSuccess: a burst arrives 1 s after another
// holder's success, within the 10 s fresh-success window. The leader's
// first request finds the success; the followers, which came while it
// was on its way, arrived within the window too, so they share it and
// make no request of their own.
func TestCoalescedBurstOnAFreshSuccess(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := lockcore.NewMemoryStore()
		other := holdElsewhere(t, context.Background(), mem, "EUR-USD")
		fence := other.Fence()
		if err := other.Release(context.Background(), lockcore.Success, "ref-other"); err != nil {
			t.Fatalf("other holder's release: %v", err)
		}
		time.Sleep(time.Second)
		hd := &coalescedHerd{n: 8, store: &opCounter{Store: &rttStore{Store: mem, rtt: 20 * time.Millisecond}}}
		hd.run(t)
		for i := range hd.n {
			got := hd.infos[i]
			if hd.errs[i] != nil || got.Outcome != lockcore.Released || got.Fence != fence || got.ResultRef != "ref-other" || got.Coalesced != (i > 0) {
				t.Errorf("invocation %d: %+v, %v; want RELEASED with the other holder's success, coalesced %v", i, got, hd.errs[i], i > 0)
			}
		}
		if n := hd.store.acquires.Load() + hd.store.gets.Load(); n != 1 {
			t.Errorf("%d lock requests, want 1: the leader's", n)
		}
	})
}

// TestCoalescedNoWaitBurstOnAFreshSuccess: with a maximum wait of 0 an
// invocation does not wait, but its first attempt is made and decides: a
// burst arriving within the fresh-success window is RELEASED with the
// success, each invocation by the request it makes itself or by the
// leader's, not FAILED for want of time to wait for the leader's.
func TestCoalescedNoWaitBurstOnAFreshSuccess(t *testing.T) {
	tests := []struct {
		name     string
		coalesce bool
	}{
		{"waiting on the store", false},
		{"coalesced", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				mem := lockcore.NewMemoryStore()
				other := holdElsewhere(t, context.Background(), mem, "EUR-USD")
				fence := other.Fence()
				if err := other.Release(context.Background(), lockcore.Success, "ref-other"); err != nil {
					t.Fatalf("other holder's release: %v", err)
				}
				time.Sleep(time.Second)
				hd := &coalescedHerd{n: 4, store: &opCounter{Store: &rttStore{Store: mem, rtt: 20 * time.Millisecond}},
					opts: []lockmw.Option{coalescing(tt.coalesce), lockmw.WithLockOptions(lockcore.WithMaxWait(0))}}
				hd.run(t)
				for i := range hd.n {
					if got := hd.infos[i]; hd.errs[i] != nil || got.Outcome != lockcore.Released || got.Fence != fence || got.ResultRef != "ref-other" {
						t.Errorf("invocation %d: %+v, %v; want RELEASED with the other holder's success", i, got, hd.errs[i])
					}
				}
			})
		})
	}
}

// TestCoalescedFreshBurstCountsNoWait: a burst on a fresh success waits
// for no holder: each invocation is answered by a first request, its own
// or its leader's, and its metrics say so as a waiter on the store's do:
// WaitForLock 0 and no wait duration, whether or not it was coalesced.
func TestCoalescedFreshBurstCountsNoWait(t *testing.T) {
	tests := []struct {
		name     string
		coalesce bool
	}{
		{"waiting on the store", false},
		{"coalesced", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				mem := lockcore.NewMemoryStore()
				other := holdElsewhere(t, context.Background(), mem, "EUR-USD")
				if err := other.Release(context.Background(), lockcore.Success, "ref-other"); err != nil {
					t.Fatalf("other holder's release: %v", err)
				}
				time.Sleep(time.Second)
				hd := &coalescedHerd{n: 4, store: &opCounter{Store: &rttStore{Store: mem, rtt: 20 * time.Millisecond}},
					opts: []lockmw.Option{coalescing(tt.coalesce)}}
				hd.run(t)
				for i := range hd.n {
					if got := hd.infos[i]; hd.errs[i] != nil || got.Outcome != lockcore.Released {
						t.Fatalf("invocation %d: %+v, %v; want RELEASED", i, got, hd.errs[i])
					}
					d := hd.doc(t, i)
					if d["WaitForLock"] != 0.0 {
						t.Errorf("invocation %d: %s = %v, want 0: it waited for no holder", i, "WaitForLock", d["WaitForLock"])
					}
					if v, ok := d["LockAcquisitionWaitDuration"]; ok {
						t.Errorf("invocation %d: %s = %v, want none", i, "LockAcquisitionWaitDuration", v)
					}
				}
			})
		})
	}
}
