package lockcore_test

import (
	"context"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/lockcore/storeapi"
)

// longestPoll is the fixed pace's longest interval between two reads: the
// poll interval plus its 20 % jitter. A waiter at the fixed pace learns of
// anything on the item within it.
const longestPoll = lockcore.DefaultPollInterval * 12 / 10

// paceStore is one execution environment's view of a shared MemoryStore:
// it notes when it reads the item, and, when blind, hides the key's hold
// history from every item it returns, so that a Lock over it never predicts
// and waits at the fixed pace (a holder over it restarts the history at
// every release, which no waiter over it sees). It embeds the store, so
// Locks on it share the store's memory of hot keys.
type paceStore struct {
	*lockcore.MemoryStore
	blind bool
	mu    sync.Mutex
	reads []time.Time // guarded by mu
}

func (s *paceStore) hide(it storeapi.Item) storeapi.Item {
	if s.blind {
		it.HoldMeanMs, it.HoldDevMs = 0, 0
	}
	return it
}

func (s *paceStore) Get(ctx context.Context, k lockcore.Key) (storeapi.Item, bool, error) {
	s.mu.Lock()
	s.reads = append(s.reads, time.Now())
	s.mu.Unlock()
	it, found, err := s.MemoryStore.Get(ctx, k)
	return s.hide(it), found, err
}

func (s *paceStore) Acquire(ctx context.Context, req storeapi.AcquireRequest) (storeapi.Item, error) {
	it, err := s.MemoryStore.Acquire(ctx, req)
	return s.hide(it), err
}

func (s *paceStore) Renew(ctx context.Context, req storeapi.RenewRequest) (storeapi.Item, error) {
	it, err := s.MemoryStore.Renew(ctx, req)
	return s.hide(it), err
}

func (s *paceStore) Release(ctx context.Context, req storeapi.ReleaseRequest) (storeapi.Item, error) {
	it, err := s.MemoryStore.Release(ctx, req)
	return s.hide(it), err
}

// readTimes returns the times of the reads made through s.
func (s *paceStore) readTimes() []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.reads)
}

// handoffWaiter is what one waiter of a handoff episode did: how long after
// the holder's Release returned it returned, and when it read the item.
type handoffWaiter struct {
	lag   time.Duration
	reads []time.Time
}

// handoff runs episodes on one key: a holder acquires, holds for hold(i)
// and releases with success, while waiters that arrive 10 ms after the
// acquire wait for it, each through its own store (blind: at the fixed
// pace), kept across episodes as Lambda keeps warm environments. It returns
// each episode's waiters.
func handoff(t *testing.T, episodes, waiters int, blind bool, hold func(i int) time.Duration) [][]handoffWaiter {
	t.Helper()
	mem := lockcore.NewMemoryStore()
	fresh := lockcore.WithFreshSuccess(10 * time.Second) // lockmw's default: a waiter arriving after a short hold is answered
	holderStore := &paceStore{MemoryStore: mem, blind: blind}
	stores := make([]*paceStore, waiters)
	for w := range stores {
		stores[w] = &paceStore{MemoryStore: mem, blind: blind}
	}
	var out [][]handoffWaiter
	for i := range episodes {
		holder := newLock(t, holderStore, "holder", fresh)
		mustAcquire(t, holder)
		type result struct {
			at    time.Time
			res   lockcore.WaitResult
			err   error
			reads []time.Time
		}
		done := make([]result, waiters)
		var wg sync.WaitGroup
		for w, s := range stores {
			wg.Go(func() {
				time.Sleep(10 * time.Millisecond)
				before := len(s.readTimes())
				l := newLock(t, s, "waiter", fresh)
				res, err := l.TryAcquireElseWaitForRelease(context.Background())
				done[w] = result{at: time.Now(), res: res, err: err, reads: s.readTimes()[before:]}
			})
		}
		time.Sleep(hold(i))
		mustRelease(t, holder, lockcore.Success, "ref")
		released := time.Now()
		wg.Wait()
		var ep []handoffWaiter
		for _, r := range done {
			if r.err != nil || r.res.Outcome != lockcore.Released {
				t.Fatalf("episode %d: waiter: TryAcquireElseWaitForRelease() = %+v, %v, want Released", i+1, r.res, r.err)
			}
			ep = append(ep, handoffWaiter{lag: r.at.Sub(released), reads: r.reads})
		}
		out = append(out, ep)
	}
	return out
}

// steadyHold is a hold of 300 ms ± 10 %, and erraticHold an exponential one
// of mean 300 ms capped at 3 s: the handoff figure's holds, from rng.
func steadyHold(rng *rand.Rand) time.Duration {
	return time.Duration(270+rng.IntN(61)) * time.Millisecond
}

func erraticHold(rng *rand.Rand) time.Duration {
	return min(time.Duration(rng.ExpFloat64()*float64(300*time.Millisecond))+time.Millisecond, 3*time.Second)
}

// With steady holds (300 ms ± 10 %), waiters learn the key's hold history
// from the item and add reads shortly after the holder's guessed end: once
// three holds have made the history steady (from the fourth episode on),
// the median waiter returns within 25 ms of the release and the last within
// 60 ms, with at most 5 reads each (the fixed pace's three, 10 ms, about
// 210 ms and about 410 ms after the acquire, become the first two and two
// or three around the guessed end), where the ordinary 200 ms poll returns
// about 100 ms after it at the median.
func TestPredictiveWaitSteadyHolds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(1, 2))
		eps := handoff(t, 20, 10, false, func(int) time.Duration { return steadyHold(rng) })
		var medians []time.Duration
		for i := 3; i < len(eps); i++ {
			var lags []time.Duration
			most := 0
			for _, w := range eps[i] {
				lags, most = append(lags, w.lag), max(most, len(w.reads))
			}
			slices.Sort(lags)
			medians = append(medians, lags[len(lags)/2])
			if worst := lags[len(lags)-1]; worst > 60*time.Millisecond || most > 5 {
				t.Errorf("episode %d: last waiter returned %v after the release, most reads %d; want <= 60ms, <= 5", i+1, worst, most)
			}
		}
		slices.Sort(medians)
		if m := medians[len(medians)/2]; m > 25*time.Millisecond {
			t.Errorf("median of the episodes' median lags = %v, want <= 25ms (medians %v)", m, medians)
		}
	})
}

// With erratic holds (exponential, mean 300 ms, capped at 3 s) the history
// predicts nothing and waiters keep the ordinary pace: every waiter returns
// within one poll interval (200 ms + 20 % jitter) of the release.
func TestPredictiveWaitErraticHoldsKeepPace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(3, 4))
		eps := handoff(t, 12, 5, false, func(int) time.Duration { return erraticHold(rng) })
		for i, ep := range eps {
			for _, w := range ep {
				if w.lag > longestPoll {
					t.Errorf("episode %d: a waiter returned %v after the release, want within one poll interval (%v)", i+1, w.lag, longestPoll)
				}
			}
		}
	})
}

// The handoff figure with erratic holds (20 episodes on one key, 10
// waiters arriving 10 ms after each acquire, exponential holds of mean
// 300 ms, capped at 3 s), for ten keys' hold times (the first the
// bench's), each run with predictive waiting and at the fixed pace (the
// history hidden): the predictive waiters add no reads to the fixed pace
// (no waiter reads sooner than its shortest interval, the poll interval
// less its 20 % jitter, after its previous read) and spend no more reads
// than it. Over episodes 3 to 20 of each key, as the bench counts. A young
// history is the risk: the first holds of an erratic key can look alike
// (here the seventh key's first two, 137 ms apart at most).
func TestPredictiveWaitErraticHoldsAddNoReads(t *testing.T) {
	const from, keys = 2, 10 // the first two episodes build the history
	shortest := lockcore.DefaultPollInterval * 8 / 10
	reads := map[bool]float64{}
	for seed := uint64(1); seed <= keys; seed++ {
		for _, blind := range []bool{false, true} {
			synctest.Test(t, func(t *testing.T) {
				rng := rand.New(rand.NewPCG(seed, 23))
				eps := handoff(t, 20, 10, blind, func(int) time.Duration { return erraticHold(rng) })
				for i := from; i < len(eps); i++ {
					for w, hw := range eps[i] {
						reads[blind] += float64(len(hw.reads))
						for k := 1; k < len(hw.reads); k++ {
							if gap := hw.reads[k].Sub(hw.reads[k-1]); !blind && gap < shortest {
								t.Errorf("key %d, episode %d, waiter %d: read %d came %v after the one before, want >= %v (no reads added to the fixed pace)",
									seed, i+1, w, k+1, gap, shortest)
							}
						}
					}
				}
			})
		}
	}
	waiters := float64(keys * 18 * 10)
	pred, fixed := reads[false]/waiters, reads[true]/waiters
	// Both series are the fixed pace then, so their means differ by the
	// jitter alone: 1800 waiters give a mean within a few hundredths of a
	// read.
	if pred > fixed+0.05 {
		t.Errorf("reads per waiter: predictive %.3f, fixed pace %.3f; want no more than the fixed pace's (+0.05 for the jitter)", pred, fixed)
	}
	t.Logf("reads per waiter: predictive %.3f, fixed pace %.3f", pred, fixed)
}

// steadyHistory gives the key of mem a steady history of holds of about
// hold (four holds, within 2 % of it), and checks that the item shows it
// steady (deviation at most 35 % of the mean), so that a waiter on it
// predicts the next holder's end.
func steadyHistory(t *testing.T, mem *lockcore.MemoryStore, hold time.Duration) {
	t.Helper()
	for _, f := range []float64{1, 0.98, 1.02, 1} {
		l := newLock(t, mem, "history")
		mustAcquire(t, l)
		time.Sleep(time.Duration(f * float64(hold)))
		mustRelease(t, l, lockcore.Success, "old")
	}
	it, _, err := mem.Get(context.Background(), lockcore.Key{Group: "fx", ID: "EUR-USD"})
	if err != nil || it.HoldMeanMs <= 0 || float64(it.HoldDevMs) > 0.35*float64(it.HoldMeanMs) {
		t.Fatalf("history %d/%d ms (%v), want a steady history of about %v", it.HoldMeanMs, it.HoldDevMs, err, hold)
	}
}

// A waiter whose holder's history predicts a long hold learns of an early
// end no later than the fixed pace would: within one poll interval (and
// its jitter) of a failure or a success, and of a crash at the fixed pace's
// take-over, an unchanged item for a lease stretched by the drift bound plus
// a poll interval, seen at the next read. A failure 50 ms into holds of 5 s
// on average is retried at once (the first failure of an episode has no
// not-before); a crash into holds of 20 s is taken over after about 6.3 s,
// not after the guessed 20 s.
func TestPredictiveWaitLearnsOfEarlyEnd(t *testing.T) {
	staleAfter := time.Duration(float64(lockcore.DefaultLease)*(1+lockcore.DefaultDrift)) + lockcore.DefaultPollInterval
	const arrival = 10 * time.Millisecond // after the holder's acquire
	tests := []struct {
		name    string
		history time.Duration
		// hold acquires the lock and arranges its early end; it returns a
		// clean-up.
		hold       func(t *testing.T, mem *lockcore.MemoryStore) (cleanup func())
		want       lockcore.WaitResult // Outcome, AfterFailure, TookOver
		from, till time.Duration       // when the waiter must return, after the holder's acquire
	}{
		{
			name: "failure 50ms into 5s holds", history: 5 * time.Second,
			hold: endsWith(lockcore.Failure, 50*time.Millisecond),
			want: lockcore.WaitResult{Outcome: lockcore.Acquired, AfterFailure: true},
			from: 50 * time.Millisecond, till: 50*time.Millisecond + longestPoll,
		},
		{
			name: "success 50ms into 5s holds", history: 5 * time.Second,
			hold: endsWith(lockcore.Success, 50*time.Millisecond),
			want: lockcore.WaitResult{Outcome: lockcore.Released},
			from: 50 * time.Millisecond, till: 50*time.Millisecond + longestPoll,
		},
		{
			name: "success 2s into 5s holds", history: 5 * time.Second,
			hold: endsWith(lockcore.Success, 2*time.Second),
			want: lockcore.WaitResult{Outcome: lockcore.Released},
			from: 2 * time.Second, till: 2*time.Second + longestPoll,
		},
		{
			name: "crash at once into 20s holds", history: 20 * time.Second,
			hold: func(t *testing.T, mem *lockcore.MemoryStore) func() {
				return crashHolder(t, mem, lockcore.DefaultLease)
			},
			want: lockcore.WaitResult{Outcome: lockcore.Acquired, TookOver: true},
			from: arrival + staleAfter, till: arrival + staleAfter + longestPoll,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				mem := lockcore.NewMemoryStore()
				steadyHistory(t, mem, tt.history)
				acquired := time.Now()
				cleanup := tt.hold(t, mem)
				defer cleanup()
				time.Sleep(arrival)
				w := newLock(t, mem, "waiter")
				res, err := w.TryAcquireElseWaitForRelease(context.Background())
				at := time.Since(acquired)
				if err != nil || res.Outcome != tt.want.Outcome || res.AfterFailure != tt.want.AfterFailure || res.TookOver != tt.want.TookOver {
					t.Fatalf("TryAcquireElseWaitForRelease() = %+v, %v, want %v (AfterFailure %v, TookOver %v)",
						res, err, tt.want.Outcome, tt.want.AfterFailure, tt.want.TookOver)
				}
				if at < tt.from || at > tt.till {
					t.Errorf("waiter returned %v after the acquire, want within [%v, %v] (%d polls)", at, tt.from, tt.till, res.Polls)
				}
				if w.HasLock() {
					mustRelease(t, w, lockcore.Success, "new")
				}
			})
		})
	}
}

// endsWith returns a hold that acquires the lock and releases it with r
// after d, in the background.
func endsWith(r lockcore.Result, d time.Duration) func(*testing.T, *lockcore.MemoryStore) func() {
	return func(t *testing.T, mem *lockcore.MemoryStore) func() {
		holder := newLock(t, mem, "holder")
		mustAcquire(t, holder)
		done := make(chan struct{})
		go func() {
			defer close(done)
			time.Sleep(d)
			mustRelease(t, holder, r, "early")
		}()
		return func() { <-done }
	}
}

// A holder's release writes the key's hold history; a later holder's
// acquisition keeps it and its release folds its own hold in. The first
// hold starts the deviation at half its length.
func TestHoldHistoryFollowsHolds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := lockcore.NewMemoryStore()
		key := lockcore.Key{Group: "fx", ID: "EUR-USD"}
		for i, want := range []struct{ mean, dev int64 }{{400, 200}, {400, 150}, {350, 163}} {
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

// A guess that comes too early costs no time: when a holder of a steady key
// (holds of 300 ms) ends later than the reads added around the guessed end
// (here 80 ms after the guess, where the added reads stop about 55 ms after
// it), its waiters still return as soon as at the fixed pace, whose reads
// the added ones must not push back. Judged on the median lag from the
// release to the waiters' return over the late episodes, against the same
// episodes at the fixed pace (the history hidden).
func TestPredictiveWaitLateEndCostsNoTime(t *testing.T) {
	const steady, late = 300 * time.Millisecond, 380 * time.Millisecond
	hold := func(i int) time.Duration {
		if i >= 4 && i%2 == 1 {
			return late
		}
		return steady
	}
	lateLags := func(blind bool) []time.Duration {
		var lags []time.Duration
		synctest.Test(t, func(t *testing.T) {
			eps := handoff(t, 12, 20, blind, hold)
			for i, ep := range eps {
				if hold(i) != late {
					continue
				}
				for _, w := range ep {
					lags = append(lags, w.lag)
				}
			}
		})
		slices.Sort(lags)
		return lags
	}
	pred, fixed := lateLags(false), lateLags(true)
	pm, fm := pred[len(pred)/2], fixed[len(fixed)/2]
	if pm > fm+25*time.Millisecond || pred[len(pred)-1] > longestPoll {
		t.Errorf("late ends: median lag %v predictive, %v at the fixed pace, last %v; want the median no more than 25ms above the fixed pace's, the last within %v",
			pm, fm, pred[len(pred)-1], longestPoll)
	}
	t.Logf("late ends: median lag %v predictive (last %v), %v at the fixed pace (last %v)", pm, pred[len(pred)-1], fm, fixed[len(fixed)-1])
}

// throttlingStore is a paceStore whose reads are throttled from from to
// until, as an item's read bucket that its herd emptied throttles them.
type throttlingStore struct {
	*paceStore
	from, until time.Time
}

func (s *throttlingStore) Get(ctx context.Context, k lockcore.Key) (storeapi.Item, bool, error) {
	if now := time.Now(); !now.Before(s.from) && now.Before(s.until) {
		s.mu.Lock()
		s.reads = append(s.reads, now)
		s.mu.Unlock()
		return storeapi.Item{}, false, errThrottle
	}
	return s.paceStore.Get(ctx, k)
}

// A read the prediction added that the store throttles does not slow the
// pace: the item throttles every read from the guessed end (300 ms into a
// 600 ms hold of a key whose holds were 300 ms) for 200 ms, which takes the
// added reads and one read of the pace, and the waiters (without
// announcements, so that they keep polling the item) return after the
// release as soon as at the fixed pace (the history hidden), whose one
// throttled read doubles one interval (the medians of 40 waiters differ by
// up to about 30 ms between runs). When an added read counted as a
// throttled read of the pace, the pace's throttled read after it
// quadrupled the interval (median 599 ms against 238).
func TestPredictiveWaitThrottledAddedReadsKeepThePace(t *testing.T) {
	const waiters, hold = 40, 600 * time.Millisecond
	lags := func(blind bool) []time.Duration {
		var lags []time.Duration
		synctest.Test(t, func(t *testing.T) {
			mem := lockcore.NewMemoryStore()
			steadyHistory(t, mem, 300*time.Millisecond)
			holder := newLock(t, mem, "holder")
			mustAcquire(t, holder)
			acquired := time.Now()
			done := make([]time.Time, waiters)
			var wg sync.WaitGroup
			for w := range waiters {
				s := &throttlingStore{paceStore: &paceStore{MemoryStore: mem, blind: blind},
					from: acquired.Add(300 * time.Millisecond), until: acquired.Add(500 * time.Millisecond)}
				wg.Go(func() {
					time.Sleep(10 * time.Millisecond)
					l := newLock(t, s, "waiter", lockcore.WithHerd(lockcore.Herd{NoAnnouncements: true}))
					res, err := l.TryAcquireElseWaitForRelease(context.Background())
					if err != nil || res.Outcome != lockcore.Released {
						t.Errorf("waiter %d: TryAcquireElseWaitForRelease() = %+v, %v, want Released", w, res, err)
					}
					done[w] = time.Now()
				})
			}
			time.Sleep(hold)
			mustRelease(t, holder, lockcore.Success, "ref")
			released := time.Now()
			wg.Wait()
			for _, at := range done {
				lags = append(lags, at.Sub(released))
			}
		})
		slices.Sort(lags)
		return lags
	}
	pred, fixed := lags(false), lags(true)
	pm, fm := pred[len(pred)/2], fixed[len(fixed)/2]
	if pm > fm+50*time.Millisecond || pred[len(pred)-1] > 2*longestPoll {
		t.Errorf("after throttled reads: median lag %v predictive, %v at the fixed pace, last %v; want the median no more than 50ms above the fixed pace's, the last within %v",
			pm, fm, pred[len(pred)-1], 2*longestPoll)
	}
	t.Logf("after throttled reads: median lag %v predictive (last %v), %v at the fixed pace (last %v)", pm, pred[len(pred)-1], fm, fixed[len(fixed)-1])
}

// A throttled read that the prediction added does not send the waiter to
// the announcements, where it would read the lock item only every other
// poll: the item throttles reads for 20 ms around the first added read
// (300 ms into a hold of a key whose holds were 300 ms), which no read of
// the fixed pace meets, and the holder fails 760 ms in. The waiter learns
// of the failure, and acquires, within one of the pace's longest intervals,
// as at the fixed pace (the history hidden).
func TestPredictiveWaitThrottledAddedReadKeepsReadingTheItem(t *testing.T) {
	const runs, failAt = 20, 760 * time.Millisecond
	lags := func(blind bool) []time.Duration {
		var lags []time.Duration
		for range runs {
			synctest.Test(t, func(t *testing.T) {
				mem := lockcore.NewMemoryStore()
				steadyHistory(t, mem, 300*time.Millisecond)
				holder := newLock(t, mem, "holder")
				mustAcquire(t, holder)
				acquired := time.Now()
				s := &throttlingStore{paceStore: &paceStore{MemoryStore: mem, blind: blind},
					from: acquired.Add(305 * time.Millisecond), until: acquired.Add(325 * time.Millisecond)}
				go func() {
					time.Sleep(failAt)
					mustRelease(t, holder, lockcore.Failure, "")
				}()
				time.Sleep(10 * time.Millisecond)
				l := newLock(t, s, "waiter")
				res, err := l.TryAcquireElseWaitForRelease(context.Background())
				if err != nil || res.Outcome != lockcore.Acquired || !res.AfterFailure {
					t.Fatalf("TryAcquireElseWaitForRelease() = %+v, %v, want Acquired after the failure", res, err)
				}
				lags = append(lags, time.Since(acquired)-failAt)
				mustRelease(t, l, lockcore.Success, "new")
			})
		}
		slices.Sort(lags)
		return lags
	}
	pred, fixed := lags(false), lags(true)
	if last := pred[len(pred)-1]; last > longestPoll {
		t.Errorf("a failure %v into the hold was acquired after, at the last, %v (median %v; fixed pace: last %v, median %v), want within %v",
			failAt, last, pred[len(pred)/2], fixed[len(fixed)-1], fixed[len(fixed)/2], longestPoll)
	}
	t.Logf("failure after a throttled added read: lag median %v, last %v; fixed pace median %v, last %v",
		pred[len(pred)/2], pred[len(pred)-1], fixed[len(fixed)/2], fixed[len(fixed)-1])
}

// A throttled read that the prediction did not add is the pace's, and
// stretches it as at the fixed pace, also when it comes before the pace's
// next read: here the read at a failure's not-before (250 ms into the
// hold of a key whose holds were 300 ms; the holder failed 100 ms in),
// which the item throttles. Without announcements, the next read comes at
// least the doubled interval's shortest (320 ms) after it, as it does at
// the fixed pace, not at the pace's next read from before the failure.
func TestPredictiveWaitThrottledReadAtNotBeforeStretchesThePace(t *testing.T) {
	const runs = 10
	stretched := 2 * lockcore.DefaultPollInterval * 8 / 10
	for _, blind := range []bool{false, true} {
		for range runs {
			synctest.Test(t, func(t *testing.T) {
				mem := lockcore.NewMemoryStore()
				steadyHistory(t, mem, 300*time.Millisecond)
				holder := newLock(t, mem, "holder")
				mustAcquire(t, holder)
				acquired := time.Now()
				s := &throttlingStore{paceStore: &paceStore{MemoryStore: mem, blind: blind},
					from: acquired.Add(250 * time.Millisecond), until: acquired.Add(300 * time.Millisecond)}
				go func() {
					time.Sleep(100 * time.Millisecond)
					if err := holder.Release(context.Background(), lockcore.Failure, "", lockcore.WithNotBefore(acquired.Add(250*time.Millisecond))); err != nil {
						t.Errorf("Release() = %v", err)
					}
				}()
				time.Sleep(10 * time.Millisecond)
				l := newLock(t, s, "waiter", lockcore.WithHerd(lockcore.Herd{NoAnnouncements: true}))
				res, err := l.TryAcquireElseWaitForRelease(context.Background())
				if err != nil || res.Outcome != lockcore.Acquired || !res.AfterFailure {
					t.Fatalf("TryAcquireElseWaitForRelease() = %+v, %v, want Acquired after the failure", res, err)
				}
				mustRelease(t, l, lockcore.Success, "new")
				reads := s.readTimes()
				for k := 0; k+1 < len(reads); k++ {
					if reads[k].Before(s.from) || !reads[k].Before(s.until) {
						continue
					}
					if gap := reads[k+1].Sub(reads[k]); gap < stretched {
						t.Errorf("blind %v: the read %v into the hold was throttled and the next came %v after it, want >= %v",
							blind, reads[k].Sub(acquired), gap, stretched)
					}
				}
			})
		}
	}
}

// A waiter that sees one holder after another (each releases and the next
// acquires at once, so it never reads the lock free), with steady holds
// and the holders' clocks off from its own by up to 150 ms, keeps the
// fixed pace through every handoff: no two of its reads are further apart
// than the pace's longest interval, whatever each new holder's history
// predicts.
func TestPredictiveWaitThroughHandoffsKeepsPace(t *testing.T) {
	tests := []struct {
		name   string
		offset time.Duration // of the holders' clocks from the waiter's
	}{
		{"holders' clocks behind", -150 * time.Millisecond},
		{"holders' clocks alike", 0},
		{"holders' clocks ahead", 150 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				mem := lockcore.NewMemoryStore()
				waiterStore := &paceStore{MemoryStore: mem}
				holderStore := &paceStore{MemoryStore: mem}
				done := make(chan struct{})
				go func() {
					defer close(done)
					time.Sleep(2 * time.Second) // the history is steady by then
					l := newLock(t, waiterStore, "waiter", lockcore.WithMaxWait(5*time.Second))
					if res, err := l.TryAcquireElseWaitForRelease(context.Background()); res.Outcome != lockcore.Failed {
						t.Errorf("waiter: TryAcquireElseWaitForRelease() = %v, %v; want FAILED (it never reads the lock free)", res.Outcome, err)
					}
				}()
				for i := range 40 {
					h := newLock(t, holderStore, "holder", lockcore.WithClocks(lockcore.Clocks{Wall: offsetClock(tt.offset)}))
					mustAcquire(t, h)
					time.Sleep(time.Duration(230+(i*37)%40) * time.Millisecond)
					mustRelease(t, h, lockcore.Success, "ref")
				}
				<-done
				reads := waiterStore.readTimes()
				for i := 1; i < len(reads); i++ {
					if gap := reads[i].Sub(reads[i-1]); gap > longestPoll {
						t.Errorf("read %d came %v after the one before, past the pace's longest interval %v", i, gap, longestPoll)
					}
				}
				if len(reads) < 20 {
					t.Errorf("the waiter read %d times in its 5 s wait; want at least 20", len(reads))
				}
			})
		})
	}
}

// offsetClock is a wall clock off from the host's by its value.
type offsetClock time.Duration

func (c offsetClock) Now() time.Time { return time.Now().Add(time.Duration(c)) }
