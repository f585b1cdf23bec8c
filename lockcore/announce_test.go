package lockcore_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/lockcore/storeapi"
)

// crowdedMem is a MemoryStore whose lock item serves only one strongly
// consistent read in every serveEvery (the others are throttled, as an item
// past its read capacity is), and which counts its announcement calls. It
// embeds the store, so Locks on it share the store's memory of hot keys and
// its announcements.
type crowdedMem struct {
	*lockcore.MemoryStore
	mu         sync.Mutex
	serveEvery int // 0 or 1: every read is served
	gets       int
	getAt      []time.Time // when each read of the lock item came
	annGets    int
	annPuts    int
}

func (s *crowdedMem) Get(ctx context.Context, k lockcore.Key) (storeapi.Item, bool, error) {
	s.mu.Lock()
	s.gets++
	s.getAt = append(s.getAt, time.Now())
	throttled := s.serveEvery > 1 && s.gets%s.serveEvery != 0
	s.mu.Unlock()
	if throttled {
		return storeapi.Item{}, false, fmt.Errorf("test: lock item over its read capacity: %w", lockcore.ErrThrottled)
	}
	return s.MemoryStore.Get(ctx, k)
}

func (s *crowdedMem) GetAnnouncement(ctx context.Context, k lockcore.Key, shard int) (storeapi.Announcement, bool, error) {
	s.mu.Lock()
	s.annGets++
	s.mu.Unlock()
	return s.MemoryStore.GetAnnouncement(ctx, k, shard)
}

func (s *crowdedMem) Announce(ctx context.Context, a storeapi.Announcement) (bool, error) {
	s.mu.Lock()
	s.annPuts++
	s.mu.Unlock()
	return s.MemoryStore.Announce(ctx, a)
}

func (s *crowdedMem) setServeEvery(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.serveEvery = n
}

func (s *crowdedMem) itemReads() []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Time(nil), s.getAt...)
}

func (s *crowdedMem) counts() (gets, annGets, annPuts int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gets, s.annGets, s.annPuts
}

// A herd that the lock item throttles learns the success from the
// announcement shards: the waiters that get a read of the lock item relay
// the success to their shard, the others read it there. Every waiter
// returns Released with the holder's fence and reference, most of them
// from an announcement, each within a second of the release.
func TestCrowdedWaitersReadAnnouncements(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &crowdedMem{MemoryStore: lockcore.NewMemoryStore(), serveEvery: 10}
		holder := newLock(t, s, "holder")
		mustAcquire(t, holder)
		fence := holder.Fence()
		const n = 60
		type result struct {
			res lockcore.WaitResult
			err error
			at  time.Time
		}
		done := make(chan result, n)
		var m recMetrics
		for range n {
			go func() {
				l := newLock(t, s, "waiter", lockcore.WithMetrics(&m))
				res, err := l.TryAcquireElseWaitForRelease(context.Background())
				done <- result{res, err, time.Now()}
			}()
		}
		time.Sleep(2 * time.Second)
		mustRelease(t, holder, lockcore.Success, "ref")
		released := time.Now()
		announced := 0
		for range n {
			r := <-done
			if r.err != nil || r.res.Outcome != lockcore.Released || r.res.ResultRef != "ref" || r.res.Fence != fence {
				t.Errorf("waiter: TryAcquireElseWaitForRelease() = %+v, %v, want Released with ref, fence %d", r.res, r.err, fence)
			}
			if d := r.at.Sub(released); d > time.Second {
				t.Errorf("a waiter returned %v after the release, want within 1s", d)
			}
			if r.res.Announced {
				announced++
			}
		}
		gets, annGets, annPuts := s.counts()
		if announced < n/2 || annPuts == 0 {
			t.Errorf("%d of %d waiters learned the success from an announcement (%d relays, %d shard reads, %d lock-item reads), want at least half",
				announced, n, annPuts, annGets, gets)
		}
		// The metrics count what happened: one read per announced
		// waiter, and at least one shard written, never more shards
		// than the relays tried.
		if got := m.sum(lockcore.MetricAnnouncementRead); got != float64(announced) {
			t.Errorf("%s = %v, want %d (the waiters Released by an announcement)", lockcore.MetricAnnouncementRead, got, announced)
		}
		if got := m.sum(lockcore.MetricAnnouncementWrite); got < 1 || got > float64(annPuts) {
			t.Errorf("%s = %v, want between 1 and the %d relay writes tried", lockcore.MetricAnnouncementWrite, got, annPuts)
		}
	})
}

// An announcement older than the wait is never taken for its answer: a
// waiter that saw a later holder holding, and one that never got to read
// the lock item, both ignore a success announced at an earlier fence, and
// return the holder's own success once it is published.
func TestStaleAnnouncementNotTaken(t *testing.T) {
	for _, tc := range []struct {
		name       string
		sawHolder  bool  // the waiter's first request is a write refused over the holder
		releasedAt int64 // the stale announcement's release time, from the start of the test
	}{
		{name: "saw the holder, announced with a clock ahead", sawHolder: true, releasedAt: 60_000},
		{name: "never read the item", sawHolder: false, releasedAt: -1_000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := &crowdedMem{MemoryStore: lockcore.NewMemoryStore()}
				old := newLock(t, s, "old", lockcore.WithFreshSuccess(0))
				// The store's first TryAcquireElseWaitForRelease reads
				// first (a new environment's does, see HotKeys); old's is
				// that one, so the waiter's first request is the write.
				if res, err := old.TryAcquireElseWaitForRelease(context.Background()); err != nil || res.Outcome != lockcore.Acquired {
					t.Fatalf("old: TryAcquireElseWaitForRelease() = %+v, %v", res, err)
				}
				oldFence := old.Fence()
				mustRelease(t, old, lockcore.Success, "stale")
				holder := newLock(t, s, "holder", lockcore.WithFreshSuccess(0))
				mustAcquire(t, holder)
				fence := holder.Fence()
				key := lockcore.Key{Group: "fx", ID: "EUR-USD"}
				for shard := range lockcore.DefaultAnnounceShards {
					if _, err := s.MemoryStore.Announce(context.Background(), storeapi.Announcement{Key: key, Shard: shard, Fence: oldFence,
						ResultRef: "stale", ReleasedAtMs: time.Now().UnixMilli() + tc.releasedAt}); err != nil {
						t.Fatal(err)
					}
				}
				if !tc.sawHolder {
					// Another invocation's refused write made the key hot:
					// the waiter reads first, and that read is throttled.
					if res, err := newLock(t, s, "probe", lockcore.WithMaxWait(time.Millisecond)).TryAcquireElseWaitForRelease(context.Background()); res.Outcome == lockcore.Acquired {
						t.Fatalf("probe acquired: %+v, %v", res, err)
					}
				}
				s.setServeEvery(1 << 30) // every lock-item read is throttled
				done := make(chan lockcore.WaitResult, 1)
				go func() {
					res, err := newLock(t, s, "waiter", lockcore.WithFreshSuccess(0)).TryAcquireElseWaitForRelease(context.Background())
					if err != nil {
						t.Errorf("waiter: %v", err)
					}
					done <- res
				}()
				time.Sleep(3 * time.Second)
				synctest.Wait()
				select {
				case res := <-done:
					t.Fatalf("waiter returned %+v while the holder still held the lock", res)
				default:
				}
				if _, annGets, _ := s.counts(); annGets == 0 {
					t.Errorf("the throttled waiter read no announcement; the test proves nothing")
				}
				s.setServeEvery(1)
				mustRelease(t, holder, lockcore.Success, "fresh")
				res := <-done
				if res.Outcome != lockcore.Released || res.Fence != fence || res.ResultRef != "fresh" {
					t.Errorf("waiter = %+v, want Released with fence %d and ref fresh", res, fence)
				}
			})
		})
	}
}

// Announcements cost nothing when the lock item serves every request: an
// uncontended acquire and release, and a waiter that is never throttled,
// make no announcement call.
func TestAnnouncementsCostUncontendedNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &crowdedMem{MemoryStore: lockcore.NewMemoryStore()}
		solo := newLock(t, s, "solo", lockcore.WithFreshSuccess(0))
		if res, err := solo.TryAcquireElseWaitForRelease(context.Background()); err != nil || res.Outcome != lockcore.Acquired {
			t.Fatalf("TryAcquireElseWaitForRelease() = %+v, %v", res, err)
		}
		mustRelease(t, solo, lockcore.Success, "ref")
		holder := newLock(t, s, "holder", lockcore.WithFreshSuccess(0))
		mustAcquire(t, holder)
		go func() {
			time.Sleep(time.Second)
			mustRelease(t, holder, lockcore.Success, "ref")
		}()
		if res, err := newLock(t, s, "waiter").TryAcquireElseWaitForRelease(context.Background()); err != nil || res.Outcome != lockcore.Released {
			t.Fatalf("waiter: TryAcquireElseWaitForRelease() = %+v, %v", res, err)
		}
		if _, annGets, annPuts := s.counts(); annGets+annPuts != 0 {
			t.Errorf("%d announcement reads and %d writes without a throttle, want none", annGets, annPuts)
		}
	})
}

// A crowded waiter reads the lock item at the item's own pace: after two
// throttled reads of it in a row its reads of the lock item come four polls
// apart (2^maxPaceShift; the polls between read its announcement shard), as
// a waiter's that reads only the item, instead of every other poll whatever
// the item answers (a herd past the item's read capacity then asked it for
// twice what it serves, half of it throttled). It still reads the item
// within those four polls: the end of the hold is seen within a second.
// Fails on the alternation alone: item reads 320-480 ms apart.
func TestCrowdedWaiterKeepsTheItemPace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &crowdedMem{MemoryStore: lockcore.NewMemoryStore(), serveEvery: 1 << 30} // every read of the lock item throttled
		holder := newLock(t, s, "holder")
		mustAcquire(t, holder)
		type result struct {
			res lockcore.WaitResult
			err error
			at  time.Time
		}
		done := make(chan result, 1)
		go func() {
			l := newLock(t, s, "waiter")
			res, err := l.TryAcquireElseWaitForRelease(context.Background())
			done <- result{res, err, time.Now()}
		}()
		time.Sleep(5 * time.Second)
		reads := s.itemReads()
		poll := lockcore.DefaultPollInterval
		if len(reads) < 5 {
			t.Fatalf("%d reads of the lock item in 5 s, want at least 5", len(reads))
		}
		// The first read is the wait's first request; the next two, two
		// polls apart, are throttled in a row: from then on the item's pace
		// is four polls (each 0.8 to 1.2 intervals).
		for i := 3; i < len(reads); i++ {
			if gap := reads[i].Sub(reads[i-1]); gap < 4*poll*8/10 || gap > 4*poll*12/10 {
				t.Errorf("reads %d and %d of the lock item %v apart, want four polls (%v to %v); reads at %v",
					i-1, i, gap, 4*poll*8/10, 4*poll*12/10, offsets(reads))
			}
		}
		gets, annGets, _ := s.counts()
		if annGets < 2*gets {
			t.Errorf("%d shard reads beside %d of the lock item, want the polls between the item's reads on the shard", annGets, gets)
		}
		s.setServeEvery(0)
		mustRelease(t, holder, lockcore.Success, "ref")
		released := time.Now()
		r := <-done
		if r.err != nil || r.res.Outcome != lockcore.Released || r.res.ResultRef != "ref" {
			t.Fatalf("TryAcquireElseWaitForRelease() = %+v, %v, want Released with ref", r.res, r.err)
		}
		if d := r.at.Sub(released); d > 4*poll*12/10 {
			t.Errorf("returned %v after the release, want within four polls (%v)", d, 4*poll*12/10)
		}
	})
}

// offsets returns ts as offsets from the first.
func offsets(ts []time.Time) []time.Duration {
	var ds []time.Duration
	for _, t := range ts {
		ds = append(ds, t.Sub(ts[0]))
	}
	return ds
}

// gatedMem is a MemoryStore whose reads, of the lock item and of the
// announcement shards, are throttled while closed is true, as a hot key's
// are in a brownout; writes always pass.
type gatedMem struct {
	*lockcore.MemoryStore
	mu      sync.Mutex
	closed  bool
	annGets int // announcement reads served
}

func (s *gatedMem) shut() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

func (s *gatedMem) open() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = false
}

func (s *gatedMem) Get(ctx context.Context, k lockcore.Key) (storeapi.Item, bool, error) {
	if s.shut() {
		return storeapi.Item{}, false, fmt.Errorf("test: lock item over its read capacity: %w", lockcore.ErrThrottled)
	}
	return s.MemoryStore.Get(ctx, k)
}

func (s *gatedMem) GetAnnouncement(ctx context.Context, k lockcore.Key, shard int) (storeapi.Announcement, bool, error) {
	if s.shut() {
		return storeapi.Announcement{}, false, fmt.Errorf("test: shard over its read capacity: %w", lockcore.ErrThrottled)
	}
	s.mu.Lock()
	s.annGets++
	s.mu.Unlock()
	return s.MemoryStore.GetAnnouncement(ctx, k, shard)
}

// A success announced on the shards is not the answer of a waiter that has
// since seen a later holder fail: throttled while the first holder
// released its success (relayed to every shard) and a second took the lock
// and failed with a not-before, the waiter reads the lock item (the
// failure), is held back, and at the not-before reads its shard, which
// still shows the first success. That success is older than the failure it
// saw: it must not be told RELEASED with it; the lock is free once the
// not-before passes, and the waiter takes it.
func TestAnnouncementOlderThanASeenFailureNotTaken(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := lockcore.NewMemoryStore()
		first := newLock(t, mem, "first", lockcore.WithFreshSuccess(0))
		mustAcquire(t, first)
		firstFence := first.Fence()
		gated := &gatedMem{MemoryStore: mem, closed: true}
		type result struct {
			res lockcore.WaitResult
			err error
		}
		done := make(chan result, 1)
		w := newLock(t, gated, "waiter", lockcore.WithFreshSuccess(0))
		go func() {
			res, err := w.TryAcquireElseWaitForRelease(context.Background())
			done <- result{res, err}
		}()
		time.Sleep(2 * time.Second)
		mustRelease(t, first, lockcore.Success, "first")
		key := lockcore.Key{Group: "fx", ID: "EUR-USD"}
		for shard := range lockcore.DefaultAnnounceShards { // another waiter's relay
			if _, err := mem.Announce(context.Background(), storeapi.Announcement{Key: key, Shard: shard, Fence: firstFence,
				ResultRef: "first", ReleasedAtMs: time.Now().UnixMilli()}); err != nil {
				t.Fatal(err)
			}
		}
		second := newLock(t, mem, "second", lockcore.WithFreshSuccess(0))
		mustAcquire(t, second)
		secondFence := second.Fence()
		if err := second.Release(context.Background(), lockcore.Failure, "",
			lockcore.WithNotBefore(time.Now().Add(time.Second)), lockcore.WithFailureReason("upstream_429")); err != nil {
			t.Fatalf("second: Release() = %v", err)
		}
		gated.open()
		r := <-done
		if r.err != nil || r.res.Outcome != lockcore.Acquired || r.res.Fence <= secondFence {
			t.Errorf("waiter: TryAcquireElseWaitForRelease() = %+v, %v; want Acquired above fence %d (the failure it saw), not the older success of fence %d",
				r.res, r.err, secondFence, firstFence)
		}
		if r.res.Outcome == lockcore.Acquired {
			mustRelease(t, w, lockcore.Success, "waiter")
		}
		gated.mu.Lock()
		defer gated.mu.Unlock()
		if gated.annGets == 0 {
			t.Errorf("the waiter read no announcement; the test proves nothing")
		}
	})
}
