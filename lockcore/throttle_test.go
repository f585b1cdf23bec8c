package lockcore_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/lockcore/storeapi"
)

var errThrottle = fmt.Errorf("fake store: %w", lockcore.ErrThrottled)

// A throttled first acquire is a herd, not a failure: the invocation waits
// and ends Released when the holder publishes.
func TestThrottledAcquireWaitsForRelease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := lockcore.NewMemoryStore()
		holder := newLock(t, mem, "holder")
		mustAcquire(t, holder)
		store := &hookStore{Store: mem, acquire: func(context.Context, storeapi.AcquireRequest) (storeapi.Item, error) {
			return storeapi.Item{}, errThrottle
		}}
		m := &recMetrics{}
		w := newLock(t, store, "waiter", lockcore.WithMetrics(m))
		go func() {
			time.Sleep(time.Second)
			mustRelease(t, holder, lockcore.Success, "ref")
		}()
		res, err := w.TryAcquireElseWaitForRelease(context.Background())
		if err != nil || res.Outcome != lockcore.Released || res.ResultRef != "ref" {
			t.Fatalf("TryAcquireElseWaitForRelease() = %+v, %v, want Released with ref", res, err)
		}
		if got := store.n("acquire"); got != 1 {
			t.Errorf("acquires = %d, want 1 (a throttled write is not retried as a write)", got)
		}
		if m.sum(lockcore.MetricLockThrottled) != 1 {
			t.Errorf("LockThrottled = %v, want 1", m.sum(lockcore.MetricLockThrottled))
		}
	})
}

// Throttled polls stretch the interval (up to 4 polls' worth), and a
// served poll resets it.
func TestThrottledPollsBackOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := lockcore.NewMemoryStore()
		holder := newLock(t, mem, "holder")
		mustAcquire(t, holder)
		var throttle atomic.Bool
		throttle.Store(true)
		store := &hookStore{Store: mem, get: func(ctx context.Context, k lockcore.Key) (storeapi.Item, bool, error) {
			if throttle.Load() {
				return storeapi.Item{}, false, errThrottle
			}
			return mem.Get(ctx, k)
		}}
		w := newLock(t, store, "waiter", lockcore.WithPollInterval(100*time.Millisecond))
		done := make(chan lockcore.WaitResult)
		go func() {
			res, _ := w.TryAcquireElseWaitForRelease(context.Background())
			done <- res
		}()
		time.Sleep(10 * time.Second)
		// Unthrottled: about 100 polls in 10 s. Throttled: 0.1, 0.2, then
		// 0.4 s each (±20%), about 25.
		if got := store.n("get"); got < 20 || got > 35 {
			t.Errorf("throttled polls in 10 s = %d, want 20-35", got)
		}
		throttle.Store(false)
		time.Sleep(time.Second) // the next served poll resets the pace
		before := store.n("get")
		time.Sleep(time.Second)
		if got := store.n("get") - before; got < 8 || got > 12 {
			t.Errorf("polls in 1 s after the throttling ended = %d, want 8-12", got)
		}
		mustRelease(t, holder, lockcore.Success, "ref")
		if res := <-done; res.Outcome != lockcore.Released {
			t.Errorf("Outcome = %v, want RELEASED", res.Outcome)
		}
	})
}

// A throttle that lasts past the deadline ends FAILED, in time, with an
// error that names the throttling and the key.
func TestPersistentThrottleFailsAtTheDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := lockcore.NewMemoryStore()
		holder := newLock(t, mem, "holder")
		mustAcquire(t, holder)
		store := &hookStore{Store: mem,
			acquire: func(context.Context, storeapi.AcquireRequest) (storeapi.Item, error) {
				return storeapi.Item{}, errThrottle
			},
			get: func(context.Context, lockcore.Key) (storeapi.Item, bool, error) {
				return storeapi.Item{}, false, errThrottle
			},
		}
		w := newLock(t, store, "waiter", lockcore.WithMaxWait(3*time.Second))
		start := time.Now()
		res, err := w.TryAcquireElseWaitForRelease(context.Background())
		took := time.Since(start)
		if res.Outcome != lockcore.Failed || !errors.Is(err, lockcore.ErrWaitTimeout) || !errors.Is(err, lockcore.ErrThrottled) {
			t.Fatalf("TryAcquireElseWaitForRelease() = %v, %v, want FAILED matching ErrWaitTimeout and ErrThrottled", res.Outcome, err)
		}
		if msg := err.Error(); !strings.Contains(msg, "throttled") || !strings.Contains(msg, "fx/EUR-USD") {
			t.Errorf("error %q does not name the throttling and the key fx/EUR-USD", msg)
		}
		if took > 3*time.Second+100*time.Millisecond {
			t.Errorf("FAILED after %v, want by the 3 s maximum wait", took)
		}
		mustRelease(t, holder, lockcore.Success, "")
	})
}

// The holder keeps its lease while its own herd throttles its renewals:
// they are retried soon, within validity.
func TestThrottledRenewalsKeepTheLease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := lockcore.NewMemoryStore()
		var throttled atomic.Int64
		store := &hookStore{Store: mem, renew: func(ctx context.Context, req storeapi.RenewRequest) (storeapi.Item, error) {
			// Two of three renewal attempts are throttled.
			if throttled.Add(1)%3 != 0 {
				return storeapi.Item{}, errThrottle
			}
			return mem.Renew(ctx, req)
		}}
		l := newLock(t, store, "holder", lockcore.WithLease(3*time.Second))
		mustAcquire(t, l)
		time.Sleep(20 * time.Second)
		if !l.HasLock() || !l.Valid() {
			t.Fatalf("HasLock, Valid = %v, %v after 20 s of throttled renewals, want true, true", l.HasLock(), l.Valid())
		}
		if got := store.n("renew"); got < 30 {
			t.Errorf("renewal attempts = %d, want at least 30 (one per second, 2 of 3 throttled)", got)
		}
		mustRelease(t, l, lockcore.Success, "")
	})
}

// A release throttled many times still publishes, within its timeout, and
// throttles do not use up the release attempts.
func TestThrottledReleasePublishes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := lockcore.NewMemoryStore()
		var n atomic.Int64
		store := &hookStore{Store: mem, release: func(ctx context.Context, req storeapi.ReleaseRequest) (storeapi.Item, error) {
			if n.Add(1) <= 8 {
				return storeapi.Item{}, errThrottle
			}
			return mem.Release(ctx, req)
		}}
		l := newLock(t, store, "holder", lockcore.WithStoreCalls(lockcore.StoreCalls{ReleaseAttempts: 2, ReleaseMaxBackoff: time.Second}), lockcore.WithStoreCalls(lockcore.StoreCalls{ReleaseTimeout: 2 * time.Second}))
		mustAcquire(t, l)
		start := time.Now()
		if err := l.Release(context.Background(), lockcore.Success, "ref"); err != nil {
			t.Fatalf("Release() = %v after 8 throttles, want nil", err)
		}
		// 10, 20, 40, 80, then 100 ms between attempts, ±50%: about 0.55 s.
		if took := time.Since(start); took > time.Second {
			t.Errorf("Release took %v, want about half a second, well under its 2 s timeout", took)
		}
		it, _, _ := mem.Get(context.Background(), l.Key())
		if !it.Released || it.Result != lockcore.Success {
			t.Errorf("item released %v result %q, want released success", it.Released, it.Result)
		}
	})
}

// Release attempts are bounded one by one: a hung attempt is abandoned at
// the attempt timeout and retried.
func TestReleaseAttemptTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := lockcore.NewMemoryStore()
		var n atomic.Int64
		store := &hookStore{Store: mem, release: func(ctx context.Context, req storeapi.ReleaseRequest) (storeapi.Item, error) {
			if n.Add(1) == 1 {
				<-ctx.Done() // hangs until the attempt times out
				return storeapi.Item{}, ctx.Err()
			}
			return mem.Release(ctx, req)
		}}
		l := newLock(t, store, "holder", lockcore.WithStoreCalls(lockcore.StoreCalls{AttemptTimeout: 300 * time.Millisecond}), lockcore.WithStoreCalls(lockcore.StoreCalls{ReleaseTimeout: 5 * time.Second}))
		mustAcquire(t, l)
		start := time.Now()
		if err := l.Release(context.Background(), lockcore.Success, ""); err != nil {
			t.Fatalf("Release() = %v, want nil", err)
		}
		if took := time.Since(start); took < 300*time.Millisecond || took > 2*time.Second {
			t.Errorf("Release took %v, want one 300 ms attempt timeout plus a retry", took)
		}
	})
}

func TestReadFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := lockcore.NewMemoryStore()
		opts := []lockcore.Option{lockcore.WithHerd(lockcore.Herd{ReadFirst: true}), lockcore.WithFreshSuccess(time.Minute)}

		// Uncontended: one read, one write.
		s1 := &hookStore{Store: mem}
		holder := newLock(t, s1, "holder", opts...)
		res, err := holder.TryAcquireElseWaitForRelease(context.Background())
		if err != nil || res.Outcome != lockcore.Acquired {
			t.Fatalf("uncontended TryAcquireElseWaitForRelease() = %v, %v, want ACQUIRED", res.Outcome, err)
		}
		if s1.n("get") != 1 || s1.n("acquire") != 1 {
			t.Errorf("uncontended: %d reads, %d writes, want 1, 1", s1.n("get"), s1.n("acquire"))
		}

		// Held: the waiter waits without writing, and reads the release.
		s2 := &hookStore{Store: mem}
		w := newLock(t, s2, "waiter", opts...)
		go func() {
			time.Sleep(time.Second)
			mustRelease(t, holder, lockcore.Success, "ref")
		}()
		res, err = w.TryAcquireElseWaitForRelease(context.Background())
		if err != nil || res.Outcome != lockcore.Released || res.ResultRef != "ref" {
			t.Fatalf("waiter TryAcquireElseWaitForRelease() = %+v, %v, want RELEASED with ref", res, err)
		}
		if s2.n("acquire") != 0 {
			t.Errorf("waiter made %d writes, want 0", s2.n("acquire"))
		}

		// A fresh success: one read.
		s3 := &hookStore{Store: mem}
		late := newLock(t, s3, "late", opts...)
		res, err = late.TryAcquireElseWaitForRelease(context.Background())
		if err != nil || res.Outcome != lockcore.Released || s3.n("get") != 1 || s3.n("acquire") != 0 {
			t.Errorf("late arrival = %v, %v with %d reads, %d writes, want RELEASED with 1 read, 0 writes", res.Outcome, err, s3.n("get"), s3.n("acquire"))
		}

		// A stale success (older than the window) is acquired.
		time.Sleep(2 * time.Minute)
		s4 := &hookStore{Store: mem}
		next := newLock(t, s4, "next", opts...)
		res, err = next.TryAcquireElseWaitForRelease(context.Background())
		if err != nil || res.Outcome != lockcore.Acquired {
			t.Errorf("after the window = %v, %v, want ACQUIRED", res.Outcome, err)
		}
		mustRelease(t, next, lockcore.Success, "")
	})
}

// A throttled read-first read waits too.
func TestReadFirstThrottledWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := lockcore.NewMemoryStore()
		holder := newLock(t, mem, "holder")
		mustAcquire(t, holder)
		var reads atomic.Int64
		store := &hookStore{Store: mem, get: func(ctx context.Context, k lockcore.Key) (storeapi.Item, bool, error) {
			if reads.Add(1) == 1 {
				return storeapi.Item{}, false, errThrottle
			}
			return mem.Get(ctx, k)
		}}
		w := newLock(t, store, "waiter", lockcore.WithHerd(lockcore.Herd{ReadFirst: true}))
		go func() {
			time.Sleep(time.Second)
			mustRelease(t, holder, lockcore.Success, "ref")
		}()
		res, err := w.TryAcquireElseWaitForRelease(context.Background())
		if err != nil || res.Outcome != lockcore.Released || store.n("acquire") != 0 {
			t.Errorf("TryAcquireElseWaitForRelease() = %v, %v with %d writes, want RELEASED with none", res.Outcome, err, store.n("acquire"))
		}
	})
}

// writeBucket is an item's write capacity as DynamoDB meters it: tokens
// refill at rate per second up to size, and a write is throttled unless a
// whole token is there.
type writeBucket struct {
	mu     sync.Mutex
	rate   float64
	size   float64
	tokens float64
	at     time.Time
}

func (b *writeBucket) take() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := time.Now()
	b.tokens = min(b.size, b.tokens+b.rate*now.Sub(b.at).Seconds())
	b.at = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// A release competes for the item's write capacity with the herd's own
// writes: new invocations, each writing first, arrive faster than the
// capacity refills and take every token soon after it is there. A throttled
// release retries within milliseconds, so that it publishes while the
// stream lasts instead of after it: a success the herd waits for. Ten
// episodes, each on a key of its own, judged by their median.
func TestThrottledReleaseWinsAgainstItsHerd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const episodes = 10
		var took []time.Duration
		attempts := 0
		for i := range episodes {
			mem := lockcore.NewMemoryStore()
			bucket := &writeBucket{rate: 1000, size: 1000, at: time.Now()}
			store := &hookStore{Store: mem, release: func(ctx context.Context, req storeapi.ReleaseRequest) (storeapi.Item, error) {
				if !bucket.take() {
					return storeapi.Item{}, errThrottle
				}
				return mem.Release(ctx, req)
			}}
			l := newLock(t, store, fmt.Sprintf("holder-%d", i))
			mustAcquire(t, l)
			// 1.5 s of arrivals at 7,700 a second, more than seven times
			// what the item refills: the 1000-token burst is gone within
			// 0.2 s.
			streamEnd := time.Now().Add(1500 * time.Millisecond)
			var wg sync.WaitGroup
			wg.Go(func() {
				for time.Now().Before(streamEnd) {
					bucket.take()
					time.Sleep(130 * time.Microsecond)
				}
			})
			time.Sleep(300 * time.Millisecond)
			start := time.Now()
			if err := l.Release(context.Background(), lockcore.Success, "ref"); err != nil {
				t.Fatalf("Release() = %v, want nil", err)
			}
			took = append(took, time.Since(start))
			wg.Wait()
			attempts += store.n("release")
			if it, _, _ := mem.Get(context.Background(), l.Key()); !it.Released || it.Result != lockcore.Success {
				t.Errorf("item released %v result %q, want released success", it.Released, it.Result)
			}
		}
		slices.Sort(took)
		median := took[episodes/2]
		t.Logf("releases took %v (median %v), %d attempts", took, median, attempts)
		// Retried every 10-100 ms, most releases win only after the
		// stream, 1.2 s after they began.
		if median > 150*time.Millisecond {
			t.Errorf("median release took %v against a herd's writes, want under 150 ms: the herd waits for it", median)
		}
	})
}
