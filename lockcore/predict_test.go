package lockcore_test

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/herdlock/herdlock/lockcore"
)

// handoff runs episodes on one key: a holder acquires, holds for hold(i)
// and releases with success, while waiters that arrive 10 ms after the
// acquire wait for it. It returns, per episode, the longest time between the
// holder's Release returning and a waiter's TryAcquireElseWaitForRelease
// returning, the median of those times, and the most reads one waiter made.
func handoff(t *testing.T, episodes, waiters int, hold func(i int) time.Duration) (lag, median []time.Duration, reads []int) {
	t.Helper()
	s := newCountingMem()
	fresh := lockcore.WithFreshSuccess(0)
	for i := range episodes {
		holder := newLock(t, s, "holder", fresh)
		mustAcquire(t, holder)
		s.take()
		type result struct {
			at    time.Time
			res   lockcore.WaitResult
			err   error
			reads int
		}
		done := make(chan result, waiters)
		for range waiters {
			go func() {
				time.Sleep(10 * time.Millisecond)
				one := &countingMem{MemoryStore: s.MemoryStore}
				l := newLock(t, one, "waiter", fresh)
				res, err := l.TryAcquireElseWaitForRelease(context.Background())
				done <- result{at: time.Now(), res: res, err: err, reads: count(one.take(), "get")}
			}()
		}
		time.Sleep(hold(i))
		mustRelease(t, holder, lockcore.Success, "ref")
		released := time.Now()
		var worst time.Duration
		var lags []time.Duration
		most := 0
		for range waiters {
			r := <-done
			if r.err != nil || r.res.Outcome != lockcore.Released {
				t.Fatalf("episode %d: waiter: TryAcquireElseWaitForRelease() = %+v, %v, want Released", i, r.res, r.err)
			}
			worst, most = max(worst, r.at.Sub(released)), max(most, r.reads)
			lags = append(lags, r.at.Sub(released))
		}
		slices.Sort(lags)
		lag, median, reads = append(lag, worst), append(median, lags[len(lags)/2]), append(reads, most)
	}
	return lag, median, reads
}

// With steady holds (300 ms ± 10 %), waiters learn the key's hold history
// from the item and wake shortly after the holder's guessed end: from the
// third episode on, the median waiter returns within 25 ms of the release
// and the last within 60 ms, with at most 4 reads each, where the ordinary
// 200 ms poll returns about 100 ms after it at the median.
func TestPredictiveWaitSteadyHolds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(1, 2))
		lag, median, reads := handoff(t, 20, 10, func(int) time.Duration {
			return time.Duration(270+rng.IntN(61)) * time.Millisecond
		})
		var all []time.Duration
		for i := 2; i < len(lag); i++ {
			all = append(all, median[i])
			if lag[i] > 60*time.Millisecond || reads[i] > 4 {
				t.Errorf("episode %d: last waiter returned %v after the release, most reads %d; want <= 60ms, <= 4",
					i+1, lag[i], reads[i])
			}
		}
		slices.Sort(all)
		if m := all[len(all)/2]; m > 25*time.Millisecond {
			t.Errorf("median of the episodes' median lags = %v, want <= 25ms (medians %v, worst %v, reads %v)", m, median, lag, reads)
		}
	})
}

// With erratic holds (exponential, mean 300 ms, capped at 3 s) the history
// predicts nothing and waiters keep the ordinary pace: every waiter returns
// within one poll interval (200 ms + 20 % jitter) of the release.
func TestPredictiveWaitErraticHoldsKeepPace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(3, 4))
		lag, _, _ := handoff(t, 12, 5, func(int) time.Duration {
			return min(time.Duration(rng.ExpFloat64()*300)*time.Millisecond+time.Millisecond, 3*time.Second)
		})
		for i, d := range lag {
			if d > 240*time.Millisecond {
				t.Errorf("episode %d: last waiter returned %v after the release, want within one poll interval (240ms)", i+1, d)
			}
		}
	})
}

// A holder's release writes the key's hold history; a later holder's
// acquisition keeps it and its release folds its own hold in.
func TestHoldHistoryFollowsHolds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := lockcore.NewMemoryStore()
		key := lockcore.Key{Group: "fx", ID: "EUR-USD"}
		for i, want := range []struct{ mean, dev int64 }{{400, 50}, {400, 38}, {350, 79}} {
			l := newLock(t, s, "holder", lockcore.WithFreshSuccess(0))
			mustAcquire(t, l)
			time.Sleep([]time.Duration{400, 400, 200}[i] * time.Millisecond)
			mustRelease(t, l, lockcore.Success, "ref")
			it, _, err := s.Get(context.Background(), key)
			if err != nil || it.HoldMeanMs != want.mean || it.HoldDevMs != want.dev {
				t.Errorf("after hold %d: history %d/%d (%v), want %d/%d", i+1, it.HoldMeanMs, it.HoldDevMs, err, want.mean, want.dev)
			}
		}
	})
}
