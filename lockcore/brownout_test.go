package lockcore_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/lockcore/storeapi"
)

// errClientTimeout is a client's own timeout of one attempt (the SDK's
// HTTP client timeout): the server may have applied the request.
type clientTimeout struct{}

func (clientTimeout) Error() string   { return "store request timed out" }
func (clientTimeout) Timeout() bool   { return true }
func (clientTimeout) Temporary() bool { return true }

// brownoutStore is a remote store in a brownout: until its end, the server
// answers every call after slow, well past the client's per-attempt timeout;
// then after fast. The server applies a call halfway through its answer
// time; the client gives up at its timeout (0: it has none, only the call's
// context bounds it) or when the call's context ends, whether or not the
// call was applied.
type brownoutStore struct {
	mem      *lockcore.MemoryStore
	slow     func(time.Time) time.Duration // the answer time then; 0 outside a brownout
	fast     time.Duration
	timeout  time.Duration // the client's per-attempt timeout; 0: none
	calls    atomic.Int64
	applied  atomic.Int64 // calls applied whose answer the client did not get
	acquires atomic.Int64 // Acquire calls
}

// call runs apply as the server does, and returns its error, or the
// client's when the client gave up first.
func (s *brownoutStore) call(ctx context.Context, apply func() error) error {
	s.calls.Add(1)
	d := s.fast
	if slow := s.slow(time.Now()); slow > 0 {
		d = slow
	}
	if s.timeout == 0 {
		if err := roundTrip(ctx, d/2); err != nil {
			return err
		}
		err := apply()
		if rerr := roundTrip(ctx, d-d/2); rerr != nil {
			s.applied.Add(1)
			return rerr
		}
		return err
	}
	if d/2 >= s.timeout {
		if err := roundTrip(ctx, s.timeout); err != nil {
			return err
		}
		return clientTimeout{}
	}
	if err := roundTrip(ctx, d/2); err != nil {
		return err
	}
	err := apply()
	if d >= s.timeout {
		if rerr := roundTrip(ctx, s.timeout-d/2); rerr != nil {
			s.applied.Add(1)
			return rerr
		}
		s.applied.Add(1)
		return clientTimeout{}
	}
	if rerr := roundTrip(ctx, d-d/2); rerr != nil {
		s.applied.Add(1)
		return rerr
	}
	return err
}

func (s *brownoutStore) Acquire(ctx context.Context, r storeapi.AcquireRequest) (it storeapi.Item, err error) {
	s.acquires.Add(1)
	err = s.call(ctx, func() error { it, err = s.mem.Acquire(context.WithoutCancel(ctx), r); return err })
	return it, err
}

func (s *brownoutStore) Renew(ctx context.Context, r storeapi.RenewRequest) (it storeapi.Item, err error) {
	err = s.call(ctx, func() error { it, err = s.mem.Renew(context.WithoutCancel(ctx), r); return err })
	return it, err
}

func (s *brownoutStore) Release(ctx context.Context, r storeapi.ReleaseRequest) (it storeapi.Item, err error) {
	err = s.call(ctx, func() error { it, err = s.mem.Release(context.WithoutCancel(ctx), r); return err })
	return it, err
}

func (s *brownoutStore) Get(ctx context.Context, k lockcore.Key) (it storeapi.Item, found bool, err error) {
	err = s.call(ctx, func() error { it, found, err = s.mem.Get(context.WithoutCancel(ctx), k); return err })
	return it, found, err
}

// A herd that arrives in a brownout (the server answers slower than the
// client's attempt timeout for 3 s, then recovers, then browns out again
// for 3 s while the holder releases) ends with one holder and
// every other invocation RELEASED: an acquire whose answer and settling
// read timed out is settled once the server answers again, and waited on
// within the deadline; the holder's release keeps trying within its budget.
func TestBrownoutHerdEndsWithOneHolder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const herd = 20
		// The client gives up at 500 ms. Browned out for the first 3 s,
		// as the herd arrives: answers come after 800 ms, the calls
		// applied at 400 ms. And again from 4 s to 12.5 s, as its holder
		// releases, longer than five release attempts take: answers after
		// 2 s, no call applied in time.
		start := time.Now()
		slow := func(now time.Time) time.Duration {
			switch d := now.Sub(start); {
			case d < 3*time.Second:
				return 800 * time.Millisecond
			case d >= 4*time.Second && d < 12500*time.Millisecond:
				return 2 * time.Second
			}
			return 0
		}
		store := &brownoutStore{mem: lockcore.NewMemoryStore(), slow: slow,
			fast: 20 * time.Millisecond, timeout: 500 * time.Millisecond}
		var holding, maxHolding atomic.Int64
		outcomes := make([]lockcore.Outcome, herd)
		errs := make([]error, herd)
		relErrs := make([]error, herd)
		var wg sync.WaitGroup
		for i := range herd {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second) // the invocation's deadline
				defer cancel()
				// A lease longer than the second brownout: the holder's
				// lease must not lapse while its release is retried.
				l := newLock(t, store, "herd", lockcore.WithHerd(lockcore.Herd{ReadFirst: true}), lockcore.WithLease(20*time.Second))
				res, err := l.TryAcquireElseWaitForRelease(ctx)
				outcomes[i], errs[i] = res.Outcome, err
				if res.Outcome != lockcore.Acquired {
					return
				}
				n := holding.Add(1)
				for m := maxHolding.Load(); n > m && !maxHolding.CompareAndSwap(m, n); m = maxHolding.Load() {
				}
				time.Sleep(time.Until(start.Add(4500 * time.Millisecond))) // the upstream call, until the second brownout
				if !l.Valid() {
					relErrs[i] = context.Cause(l.Context())
				}
				holding.Add(-1)
				if err := l.Release(ctx, lockcore.Success, "ref"); err != nil {
					relErrs[i] = err
				}
			}()
			time.Sleep(50 * time.Millisecond) // the herd arrives over a second
		}
		wg.Wait()
		done := time.Since(start)
		count := map[lockcore.Outcome]int{}
		for i, o := range outcomes {
			count[o]++
			if errs[i] != nil {
				t.Errorf("invocation %d: %v, %v", i, o, errs[i])
			}
			if relErrs[i] != nil {
				t.Errorf("holder %d: release or validity: %v", i, relErrs[i])
			}
		}
		if count[lockcore.Acquired] != 1 || count[lockcore.Released] != herd-1 || maxHolding.Load() != 1 {
			t.Errorf("outcomes ACQUIRED %d, RELEASED %d, FAILED %d, most holders at once %d; want 1, %d, 0, 1",
				count[lockcore.Acquired], count[lockcore.Released], count[lockcore.Failed], maxHolding.Load(), herd-1)
		}
		t.Logf("ACQUIRED %d, RELEASED %d, FAILED %d; upstream calls %d; store calls %d (%d applied without an answer); all done %v after the start, %v after the last brownout",
			count[lockcore.Acquired], count[lockcore.Released], count[lockcore.Failed], count[lockcore.Acquired],
			store.calls.Load(), store.applied.Load(), done, done-12500*time.Millisecond)
	})
}
