package lockcore_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/lockcore/storeapi"
)

// failingHerd runs n invocations of the herd pattern on store, each
// starting after its delay. A holder calls upstream(attempt); a nil error
// releases Success, an error releases Failure with opts(err). It returns
// the results and errors, in invocation order.
func failingHerd(t *testing.T, store storeapi.Store, delays []time.Duration, upstream func(attempt int) error,
	opts func(err error) []lockcore.ReleaseOption, lockOpts ...lockcore.Option) ([]lockcore.WaitResult, []error) {
	t.Helper()
	results := make([]lockcore.WaitResult, len(delays))
	errs := make([]error, len(delays))
	var calls atomic.Int32
	var wg sync.WaitGroup
	for i, d := range delays {
		l := newLock(t, store, "w", lockOpts...)
		wg.Go(func() {
			time.Sleep(d)
			results[i], errs[i] = l.TryAcquireElseWaitForRelease(context.Background())
			if results[i].Outcome != lockcore.Acquired {
				return
			}
			time.Sleep(20 * time.Millisecond) // the upstream call
			if err := upstream(int(calls.Add(1))); err != nil {
				errs[i] = l.Release(context.Background(), lockcore.Failure, "", opts(err)...)
				return
			}
			errs[i] = l.Release(context.Background(), lockcore.Success, "data")
		})
	}
	wg.Wait()
	return results, errs
}

var errUpstream = errors.New("upstream: 429")

func tally13(results []lockcore.WaitResult, errs []error) (acquired, released, holderFailed int) {
	for i, r := range results {
		switch {
		case r.Outcome == lockcore.Acquired:
			acquired++
		case r.Outcome == lockcore.Released:
			released++
		case errors.Is(errs[i], lockcore.ErrHolderFailed):
			holderFailed++
		}
	}
	return
}

func burst(n int, every time.Duration) []time.Duration {
	d := make([]time.Duration, n)
	for i := range d {
		d[i] = time.Duration(i) * every
	}
	return d
}

// TestRetryAfterIsHonoured: after a failure that says "not before 2s", no
// waiter or newcomer takes over sooner; one does then, and its success
// ends the wait of all the others.
func TestRetryAfterIsHonoured(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := lockcore.NewMemoryStore()
		var at []time.Duration
		start := time.Now()
		upstream := func(attempt int) error {
			at = append(at, time.Since(start))
			if attempt == 1 {
				return errUpstream
			}
			return nil
		}
		retryAfter := func(error) []lockcore.ReleaseOption {
			return []lockcore.ReleaseOption{lockcore.WithNotBefore(time.Now().Add(2 * time.Second)), lockcore.WithFailureReason("upstream_429")}
		}
		store := &hookStore{Store: mem}
		results, errs := failingHerd(t, store, burst(10, 100*time.Millisecond), upstream, retryAfter)
		acquired, released, _ := tally13(results, errs)
		// Held back, a waiter does not write until the not-before: its
		// first attempt, then one race at the not-before.
		if n := store.n("acquire"); n > 2*10 {
			t.Errorf("%d conditional writes, want at most 2 per invocation", n)
		}
		if len(at) != 2 || acquired != 2 || released != 8 {
			t.Fatalf("upstream calls at %v, acquired %d, released %d; want 2 calls, 2 holders, 8 released", at, acquired, released)
		}
		// The first call ends at 20ms; the retry may start 2s later.
		if gap := at[1] - at[0]; gap < 2*time.Second {
			t.Errorf("retry %v after the first call, want at least 2s (Retry-After)", gap)
		}
		for i, err := range errs {
			if err != nil {
				t.Errorf("invocation %d: %v", i, err)
			}
		}
	})
}

// TestNotBeforePastTheDeadline: a not-before later than the waiters can
// wait ends their wait at once, with the not-before in the error.
func TestNotBeforePastTheDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := lockcore.NewMemoryStore()
		holder := newLock(t, mem, "h")
		mustAcquire(t, holder)
		notBefore := time.Now().Add(8 * time.Second)
		time.AfterFunc(time.Second, func() {
			if err := holder.Release(context.Background(), lockcore.Failure, "", lockcore.WithNotBefore(notBefore),
				lockcore.WithFailureReason("upstream_429")); err != nil {
				t.Errorf("Release() = %v", err)
			}
		})
		results, errs := failingHerd(t, mem, append(burst(5, 0), 2*time.Second), func(int) error { return nil }, nil,
			lockcore.WithMaxWait(5*time.Second))
		for i, err := range errs {
			var hf *lockcore.HolderFailedError
			if results[i].Outcome != lockcore.Failed || !errors.As(err, &hf) || !hf.NotBefore.Equal(notBefore.Truncate(time.Millisecond)) || hf.Attempts != 1 {
				t.Errorf("invocation %d = %v, %v; want FAILED with the not-before %v after 1 attempt", i, results[i].Outcome, err, notBefore)
			}
			if results[i].Waited > 1240*time.Millisecond {
				t.Errorf("invocation %d waited %v, want to end within a poll of the release at 1s", i, results[i].Waited)
			}
		}
	})
}

// TestSuccessAfterAFailureEndsTheEpisode: the retry succeeds, the waiters
// read its result, and the item's episode is cleared, so a later failure
// counts from 1 again.
func TestSuccessAfterAFailureEndsTheEpisode(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := lockcore.NewMemoryStore()
		upstream := func(attempt int) error {
			if attempt == 1 {
				return errUpstream
			}
			return nil
		}
		results, errs := failingHerd(t, mem, burst(8, 50*time.Millisecond), upstream,
			func(error) []lockcore.ReleaseOption { return nil }, lockcore.WithFreshSuccess(time.Minute))
		if acquired, released, failed := tally13(results, errs); acquired != 2 || released != 6 || failed != 0 {
			t.Errorf("acquired %d released %d holder-failed %d, want 2, 6, 0", acquired, released, failed)
		}
		it, _, _ := mem.Get(context.Background(), lockcore.Key{Group: "fx", ID: "EUR-USD"})
		if it.Result != lockcore.Success || it.Failures != 0 || it.FailRecentUntilMs != 0 {
			t.Errorf("item after the successful retry: result %q failures %d recent until %d, want success, 0, 0", it.Result, it.Failures, it.FailRecentUntilMs)
		}
		l := newLock(t, mem, "next")
		mustAcquire(t, l)
		mustRelease(t, l, lockcore.Failure, "")
		if it, _, _ := mem.Get(context.Background(), l.Key()); it.Failures != 1 {
			t.Errorf("Failures of the next failure = %d, want 1", it.Failures)
		}
	})
}

// TestCrashedRetryIsStillTakenOver: the taker-over of a failure crashes
// (publishes nothing); the waiters take its lock over as they take over
// any crashed holder, and the next attempt counts in the same episode.
func TestCrashedRetryIsStillTakenOver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := lockcore.NewMemoryStore()
		first := newLock(t, mem, "first", lockcore.WithFailureEpisode(lockcore.FailureEpisode{MaxAttempts: 3}))
		mustAcquire(t, first)
		mustRelease(t, first, lockcore.Failure, "")
		reap := crashHolder(t, mem, 2*time.Second) // attempt 2, crashed
		defer reap()
		m := &recMetrics{}
		w := newLock(t, mem, "w", lockcore.WithLease(2*time.Second), lockcore.WithFailureEpisode(lockcore.FailureEpisode{MaxAttempts: 3}), lockcore.WithMetrics(m))
		res, err := w.TryAcquireElseWaitForRelease(context.Background())
		if err != nil || res.Outcome != lockcore.Acquired || !res.TookOver {
			t.Fatalf("TryAcquireElseWaitForRelease() = %+v, %v, want a take-over of the crashed holder", res, err)
		}
		if got := m.sum(lockcore.MetricEpisodeAttempts); got != 2 {
			t.Errorf("attempt = %v, want 2: the crashed attempt published no failure", got)
		}
		mustRelease(t, w, lockcore.Success, "")
	})
}
