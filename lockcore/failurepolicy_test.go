package lockcore_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/lockcore/storeapi"
)

// upstreamLog records the times of the upstream calls of a herd.
type upstreamLog struct {
	mu    sync.Mutex
	start time.Time
	at    []time.Duration
}

func newUpstreamLog() *upstreamLog { return &upstreamLog{start: time.Now()} }

// call records a call now and returns how many were made before it.
func (u *upstreamLog) call() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.at = append(u.at, time.Since(u.start))
	return len(u.at) - 1
}

func (u *upstreamLog) calls() []time.Duration {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]time.Duration(nil), u.at...)
}

// retryAfter returns release options that say "not before d from now", as
// an upstream's Retry-After.
func retryAfter(d time.Duration) func(error) []lockcore.ReleaseOption {
	return func(error) []lockcore.ReleaseOption {
		return []lockcore.ReleaseOption{lockcore.WithNotBefore(time.Now().Add(d)), lockcore.WithFailureReason("upstream_429")}
	}
}

// unpaced returns release options of a failure without a not-before, as a
// 503 without Retry-After.
func unpaced(error) []lockcore.ReleaseOption {
	return []lockcore.ReleaseOption{lockcore.WithFailureReason("upstream_503")}
}

// holderFailed returns err's *HolderFailedError, or nil.
func holderFailed(err error) *lockcore.HolderFailedError {
	var hf *lockcore.HolderFailedError
	if errors.As(err, &hf) {
		return hf
	}
	return nil
}

// TestPacedFailureOneAttemptPerNotBefore: an upstream answering 429 with
// Retry-After 2 s for its first 4 s gets exactly one call per not-before
// from the whole herd, however low FailureEpisode.MaxAttempts is: the paced attempts
// are not bounded by it, and the third call, the first after recovery,
// serves everybody.
func TestPacedFailureOneAttemptPerNotBefore(t *testing.T) {
	for _, maxAttempts := range []int{1, 2} {
		t.Run("max "+string(rune('0'+maxAttempts)), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				up := newUpstreamLog()
				upstream := func(int) error {
					if up.call(); time.Since(up.start) < 4*time.Second {
						return errUpstream
					}
					return nil
				}
				results, errs := failingHerd(t, lockcore.NewMemoryStore(), burst(10, 100*time.Millisecond), upstream,
					retryAfter(2*time.Second), lockcore.WithFailureEpisode(lockcore.FailureEpisode{MaxAttempts: maxAttempts}), lockcore.WithMaxWait(10*time.Second))
				calls := up.calls()
				if len(calls) != 3 {
					t.Fatalf("upstream calls at %v, want 3: at 0, after 2 s and after 4 s", calls)
				}
				for i := 1; i < len(calls); i++ {
					if gap := calls[i] - calls[i-1]; gap < 2*time.Second || gap > 2*time.Second+200*time.Millisecond {
						t.Errorf("call %d came %v after call %d, want at the Retry-After (2 s, plus the call and jitter)", i, gap, i-1)
					}
				}
				acquired, released, failed := tally13(results, errs)
				if acquired != 3 || released != 7 || failed != 0 {
					t.Errorf("acquired %d, released %d, holder-failed %d; want 3, 7, 0", acquired, released, failed)
				}
			})
		})
	}
}

// TestUnpacedFailuresAreBoundedAndHeldBack: with every call failing and
// no not-before, the episode makes FailureEpisode.MaxAttempts calls; the failure of
// the last writes the hold-back (the failure window) as the not-before,
// and everybody who cannot wait that long ends FAILED with that time, the
// reason and the attempt count.
func TestUnpacedFailuresAreBoundedAndHeldBack(t *testing.T) {
	for _, maxAttempts := range []int{1, 2, 3} {
		t.Run("max "+string(rune('0'+maxAttempts)), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				mem := lockcore.NewMemoryStore()
				m := &recMetrics{}
				up := newUpstreamLog()
				upstream := func(int) error { up.call(); return errUpstream }
				// Waiters can wait 5 s, less than the 6 s hold-back.
				results, errs := failingHerd(t, mem, burst(12, 30*time.Millisecond), upstream, unpaced,
					lockcore.WithFailureEpisode(lockcore.FailureEpisode{MaxAttempts: maxAttempts}), lockcore.WithMetrics(m), lockcore.WithMaxWait(5*time.Second))
				acquired, _, failed := tally13(results, errs)
				if n := len(up.calls()); n != maxAttempts || acquired != maxAttempts || failed != 12-maxAttempts {
					t.Fatalf("calls %d, acquired %d, ended with ErrHolderFailed %d; want %d, %d, %d",
						n, acquired, failed, maxAttempts, maxAttempts, 12-maxAttempts)
				}
				it, _, _ := mem.Get(context.Background(), lockcore.Key{Group: "fx", ID: "EUR-USD"})
				holdBackEnd := time.UnixMilli(it.ReleasedAtMs).Add(lockcore.DefaultLease)
				if !time.UnixMilli(it.NotBeforeMs).Equal(holdBackEnd) {
					t.Errorf("not-before of the exhausted episode = %v, want the last release + the failure window, %v",
						time.UnixMilli(it.NotBeforeMs), holdBackEnd)
				}
				for i, err := range errs {
					hf := holderFailed(err)
					if results[i].Outcome != lockcore.Failed {
						continue
					}
					if hf == nil || hf.Reason != "upstream_503" || hf.Attempts != maxAttempts || !hf.NotBefore.Equal(holdBackEnd) {
						t.Errorf("invocation %d: %v, want a HolderFailedError upstream_503 after %d attempts, retry after %v",
							i, err, maxAttempts, holdBackEnd)
					}
				}
				if got := m.sum(lockcore.MetricSharedFailure); got != float64(12-maxAttempts) {
					t.Errorf("LockSharedFailure = %v, want %d", got, 12-maxAttempts)
				}
				// Attempt numbers 1, 2, ..., maxAttempts.
				if got, want := m.sum(lockcore.MetricEpisodeAttempts), float64(maxAttempts*(maxAttempts+1)/2); got != want {
					t.Errorf("sum of LockEpisodeAttempts = %v, want %v", got, want)
				}
			})
		})
	}
}

// TestLongOutageBacksOff: 503s without Retry-After for a minute, and a
// herd of 3 invocations arriving every second, each able to wait 3 s: the
// exhausted episodes hold back 6 s, 12 s, 24 s, 48 s, so the minute costs
// 8 upstream calls (2 per episode), at most 10.
func TestLongOutageBacksOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := lockcore.NewMemoryStore()
		up := newUpstreamLog()
		upstream := func(int) error { up.call(); return errUpstream }
		var delays []time.Duration
		for s := range 60 {
			for range 3 {
				delays = append(delays, time.Duration(s)*time.Second)
			}
		}
		results, errs := failingHerd(t, mem, delays, upstream, unpaced, lockcore.WithMaxWait(3*time.Second))
		calls := up.calls()
		t.Logf("a minute of 503s, 3 invocations a second: %d upstream calls, at %v", len(calls), calls)
		if len(calls) > 10 {
			t.Fatalf("%d upstream calls in the minute, want at most 10", len(calls))
		}
		// Two calls per episode; each episode starts after the hold-back
		// of the one before, which doubles.
		want := []time.Duration{0, 0, 6 * time.Second, 6 * time.Second, 18 * time.Second, 18 * time.Second, 42 * time.Second, 42 * time.Second}
		if len(calls) != len(want) {
			t.Fatalf("upstream calls at %v, want 8, in pairs at about %v", calls, want)
		}
		for i, at := range calls {
			if at < want[i] || at > want[i]+2*time.Second {
				t.Errorf("call %d at %v, want within 2 s after %v", i, at, want[i])
			}
		}
		for i, err := range errs {
			if results[i].Outcome == lockcore.Failed && holderFailed(err) == nil {
				t.Errorf("invocation %d: %v, want a HolderFailedError", i, err)
			}
		}
	})
}

// TestHoldBackIsCapped: FailureEpisode.MaxHoldBack caps the doubling.
func TestHoldBackIsCapped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := lockcore.NewMemoryStore()
		opts := []lockcore.Option{lockcore.WithFailureEpisode(lockcore.FailureEpisode{MaxAttempts: 1}), lockcore.WithFailureEpisode(lockcore.FailureEpisode{Window: time.Second}), lockcore.WithFailureEpisode(lockcore.FailureEpisode{MaxHoldBack: 3 * time.Second})}
		var holdBacks []time.Duration
		for range 4 {
			l := newLock(t, mem, "h", opts...)
			res, err := l.TryAcquireElseWaitForRelease(context.Background())
			if res.Outcome != lockcore.Acquired || err != nil {
				t.Fatalf("TryAcquireElseWaitForRelease() = %v, %v, want ACQUIRED once the hold-back passed", res.Outcome, err)
			}
			if err := l.Release(context.Background(), lockcore.Failure, "", unpaced(nil)...); err != nil {
				t.Fatal(err)
			}
			it, _, _ := mem.Get(context.Background(), l.Key())
			holdBacks = append(holdBacks, time.Duration(it.NotBeforeMs-it.ReleasedAtMs)*time.Millisecond)
		}
		want := []time.Duration{time.Second, 2 * time.Second, 3 * time.Second, 3 * time.Second}
		for i := range want {
			if holdBacks[i] != want[i] {
				t.Errorf("hold-backs %v, want %v", holdBacks, want)
				break
			}
		}
	})
}

// TestRefusalNamesTheTrueTime: on every branch, a refused caller is told
// the earliest time an attempt may start: an acquire 1 ms before it is
// refused by the store's condition, and one at that time is not.
func TestRefusalNamesTheTrueTime(t *testing.T) {
	cases := []struct {
		name string
		opts func(error) []lockcore.ReleaseOption
		max  int
	}{
		{"paced, attempts left", retryAfter(4 * time.Second), 2},
		{"paced, past the attempt bound", retryAfter(4 * time.Second), 1},
		{"unpaced, episode exhausted", unpaced, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				mem := lockcore.NewMemoryStore()
				opts := []lockcore.Option{lockcore.WithFailureEpisode(lockcore.FailureEpisode{MaxAttempts: tc.max}), lockcore.WithMaxWait(time.Second)}
				holder := newLock(t, mem, "h", opts...)
				mustAcquire(t, holder)
				if err := holder.Release(context.Background(), lockcore.Failure, "", tc.opts(nil)...); err != nil {
					t.Fatal(err)
				}
				_, err := newLock(t, mem, "refused", opts...).TryAcquireElseWaitForRelease(context.Background())
				hf := holderFailed(err)
				if hf == nil || hf.NotBefore.IsZero() {
					t.Fatalf("newcomer = %v, want a HolderFailedError with a time", err)
				}
				// One conditional write each, no waiting: the store's rule.
				time.Sleep(time.Until(hf.NotBefore) - time.Millisecond)
				if ok, err := newLock(t, mem, "early", opts...).Acquire(context.Background()); ok || err != nil {
					t.Errorf("Acquire() 1 ms before the named time = %v, %v; want refused", ok, err)
				}
				time.Sleep(time.Until(hf.NotBefore))
				back := newLock(t, mem, "back", opts...)
				if ok, err := back.Acquire(context.Background()); !ok || err != nil {
					t.Fatalf("Acquire() at the named time %v = %v, %v; want acquired", hf.NotBefore, ok, err)
				}
				mustRelease(t, back, lockcore.Success, "")
			})
		})
	}
}

// TestNotBeforeNotAfterTheReleaseIsUnpaced: a not-before already past
// paces nothing: the failure counts against FailureEpisode.MaxAttempts.
func TestNotBeforeNotAfterTheReleaseIsUnpaced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := lockcore.NewMemoryStore()
		l := newLock(t, mem, "h", lockcore.WithFailureEpisode(lockcore.FailureEpisode{MaxAttempts: 1}))
		mustAcquire(t, l)
		if err := l.Release(context.Background(), lockcore.Failure, "", lockcore.WithNotBefore(time.Now().Add(-time.Second))); err != nil {
			t.Fatal(err)
		}
		it, _, _ := mem.Get(context.Background(), l.Key())
		if want := it.ReleasedAtMs + lockcore.DefaultLease.Milliseconds(); it.NotBeforeMs != want {
			t.Errorf("not-before = %d, want the hold-back of an exhausted episode, %d", it.NotBeforeMs, want)
		}
	})
}

// TestRecentFailureExpires: a failure counts as recent until the failure
// window after its not-before; a newcomer before then is held back or
// continues the episode, and one after it starts a new episode (attempt 1).
func TestRecentFailureExpires(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := lockcore.NewMemoryStore()
		opts := []lockcore.Option{lockcore.WithFailureEpisode(lockcore.FailureEpisode{MaxAttempts: 1}), lockcore.WithFailureEpisode(lockcore.FailureEpisode{Window: 3 * time.Second}), lockcore.WithMaxWait(500 * time.Millisecond)}
		holder := newLock(t, mem, "h", opts...)
		mustAcquire(t, holder)
		mustRelease(t, holder, lockcore.Failure, "") // exhausted: held back 3 s, recent for 3 s more

		time.Sleep(2 * time.Second)
		res, err := newLock(t, mem, "early", opts...).TryAcquireElseWaitForRelease(context.Background())
		if res.Outcome != lockcore.Failed || !errors.Is(err, lockcore.ErrHolderFailed) {
			t.Errorf("newcomer within the hold-back = %v, %v; want FAILED with ErrHolderFailed", res.Outcome, err)
		}
		time.Sleep(4*time.Second + time.Millisecond) // past the not-before and the window after it
		m := &recMetrics{}
		late := newLock(t, mem, "late", append(opts, lockcore.WithMetrics(m))...)
		res, err = late.TryAcquireElseWaitForRelease(context.Background())
		if res.Outcome != lockcore.Acquired || err != nil || m.sum(lockcore.MetricEpisodeAttempts) != 1 {
			t.Errorf("newcomer after the window = %v, %v, attempt %v; want ACQUIRED as attempt 1", res.Outcome, err, m.sum(lockcore.MetricEpisodeAttempts))
		}
		mustRelease(t, late, lockcore.Failure, "")
		it, _, _ := mem.Get(context.Background(), late.Key())
		if it.Failures != 1 || it.NotBeforeMs != it.ReleasedAtMs+3000 {
			t.Errorf("failure in a new episode: failures %d, hold-back %d ms; want 1 and the first hold-back, 3000 ms",
				it.Failures, it.NotBeforeMs-it.ReleasedAtMs)
		}
	})
}

// TestFreedGhostKeepsTheEpisode: an acquire whose answer is lost, and whose
// settling read fails too, frees its possible ghost with a release that
// keeps the failure episode: the attempts, the reason and the not-before
// stand, so the next holder is still the episode's next attempt and the
// attempt bound still holds.
func TestFreedGhostKeepsTheEpisode(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := lockcore.NewMemoryStore()
		first := newLock(t, mem, "first")
		mustAcquire(t, first)
		if err := first.Release(context.Background(), lockcore.Failure, "", unpaced(nil)...); err != nil {
			t.Fatal(err)
		}
		before, _, _ := mem.Get(context.Background(), first.Key())

		lost := &hookStore{Store: mem}
		lost.acquire = func(ctx context.Context, req storeapi.AcquireRequest) (storeapi.Item, error) {
			_, _ = mem.Acquire(ctx, req) // applied, its answer lost
			return storeapi.Item{}, errInjected
		}
		lost.get = func(context.Context, lockcore.Key) (storeapi.Item, bool, error) {
			return storeapi.Item{}, false, errInjected
		}
		ghost := newLock(t, lost, "ghost")
		res, err := ghost.TryAcquireElseWaitForRelease(context.Background())
		if res.Outcome != lockcore.Failed || err == nil {
			t.Fatalf("acquire with its answer and its read lost = %v, %v; want FAILED", res.Outcome, err)
		}
		after, _, _ := mem.Get(context.Background(), first.Key())
		if !after.Released || after.Revision == before.Revision {
			t.Fatalf("item after the ghost = released %t, revision %q; want the ghost's hold freed", after.Released, after.Revision)
		}
		if after.Failures != before.Failures || after.FailReason != before.FailReason ||
			after.NotBeforeMs != before.NotBeforeMs || after.FailRecentUntilMs != before.FailRecentUntilMs {
			t.Errorf("episode after freeing the ghost = failures %d, reason %q, not-before %d, recent until %d; want it kept: %d, %q, %d, %d",
				after.Failures, after.FailReason, after.NotBeforeMs, after.FailRecentUntilMs,
				before.Failures, before.FailReason, before.NotBeforeMs, before.FailRecentUntilMs)
		}

		m := &recMetrics{}
		next := newLock(t, mem, "next", lockcore.WithMetrics(m))
		mustAcquire(t, next)
		if got := m.sum(lockcore.MetricEpisodeAttempts); got != 2 {
			t.Errorf("attempt of the holder after the ghost = %v, want 2", got)
		}
		mustRelease(t, next, lockcore.Success, "")
	})
}
