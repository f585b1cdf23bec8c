package lockcore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/herdlock/herdlock/lockcore/storeapi"
)

// Release announcements. One item serves at most 3000 strongly consistent
// reads a second; a herd larger than that queues behind the lock item's
// read capacity, however well its waiters time their reads. An
// announcement is a copy of a published success in another item of the
// same table, one of a few shard items per lock key, each in a partition of
// its own: waiters that the lock item throttled read their shard instead,
// and the first of them that reads the success on the lock item copies it
// to its shard for the others.
//
// Nothing about announcements costs an uncontended lock anything: only a
// waiter that was throttled reads or writes them, and the holder never
// does. A waiter accepts an announced success only when it proves the
// success was published during the wait: its fence is at least that of a
// holder the waiter saw holding the lock, or, for a waiter that never got
// to read the lock item, its release time is after the waiter started
// (with the clock allowance). A copy is written only from a read of the
// lock item that showed the success published, and never over a later
// fence, so an announcement never shows a success the lock item did not
// publish; it expires by the table's TTL ([storeapi.AnnouncementTTL] after the
// release).

const (
	// defaultAnnounceShards is how many announcement items a lock key has
	// by default: eight partitions' read capacity, about 24,000 strongly
	// consistent reads a second, for a herd that outgrows the lock item.
	defaultAnnounceShards = 8
)

// announcing is implemented by a store that can keep announcements only
// in some configurations (a DynamoStore whose client has PutItem).
type announcing interface{ announces() bool }

// announcerOf returns s as an Announcer, or nil when it keeps none.
func announcerOf(s storeapi.Store) storeapi.Announcer {
	a, ok := s.(storeapi.Announcer)
	if !ok {
		return nil
	}
	if c, ok := s.(announcing); ok && !c.announces() {
		return nil
	}
	return a
}

// announcementOf returns the announcement of the success it published, at
// shard; ok is false when it shows no published success.
func announcementOf(it storeapi.Item, shard int) (a storeapi.Announcement, ok bool) {
	if !it.Released || it.Result != Success || it.ResultFence <= 0 {
		return storeapi.Announcement{}, false
	}
	a = storeapi.Announcement{Key: it.Key, Shard: shard, Fence: it.ResultFence, ResultRef: it.ResultRef, ReleasedAtMs: it.ReleasedAtMs,
		TTL: time.UnixMilli(it.ReleasedAtMs).Add(storeapi.AnnouncementTTL).Unix()}
	if it.ResultFence == it.Fence && len(it.Answer) > 0 {
		if len(it.Answer) <= storeapi.MaxAnnouncedAnswerBytes {
			a.Answer = bytes.Clone(it.Answer)
		} else {
			a.AnswerOmitted = true
		}
	}
	return a, true
}

// checkAnnouncement refuses an announcement no lock would write.
func checkAnnouncement(a storeapi.Announcement) error {
	switch {
	case a.Shard < 0 || a.Shard >= storeapi.MaxAnnounceShards:
		return fmt.Errorf("announcement shard %d out of range [0, %d)", a.Shard, storeapi.MaxAnnounceShards)
	case a.Fence <= 0:
		return fmt.Errorf("announcement fence %d, want positive", a.Fence)
	case len(a.Answer) > storeapi.MaxAnnouncedAnswerBytes:
		return fmt.Errorf("%w: announced answer of %d bytes, the maximum is %d", ErrAnswerTooLarge, len(a.Answer), storeapi.MaxAnnouncedAnswerBytes)
	case len(a.Answer) > 0 && a.AnswerOmitted:
		return errors.New("announcement with an answer and answer omitted")
	case a.ReleasedAtMs < 0:
		return checkNow(a.ReleasedAtMs)
	}
	if err := checkKey(a.Key); err != nil {
		return err
	}
	return checkStrings("result reference", a.ResultRef)
}

// checkShard refuses a shard out of range.
func checkShard(key Key, shard int) error {
	if shard < 0 || shard >= storeapi.MaxAnnounceShards {
		return fmt.Errorf("announcement shard %d out of range [0, %d)", shard, storeapi.MaxAnnounceShards)
	}
	return checkKey(key)
}

// Announce implements [storeapi.Announcer].
func (s *MemoryStore) Announce(ctx context.Context, a storeapi.Announcement) (bool, error) {
	if err := memCheck(ctx, checkAnnouncement(a)); err != nil {
		return false, fmt.Errorf("lockcore: memory announce: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k := storeapi.AnnouncementKey(a.Key, a.Shard)
	if cur, ok := s.announced[k]; ok && cur.Fence >= a.Fence {
		return false, nil
	}
	if s.announced == nil {
		s.announced = make(map[string]storeapi.Announcement)
	}
	a.Answer = bytes.Clone(a.Answer)
	s.announced[k] = a
	return true, nil
}

// GetAnnouncement implements [storeapi.Announcer].
func (s *MemoryStore) GetAnnouncement(ctx context.Context, key Key, shard int) (storeapi.Announcement, bool, error) {
	if err := memCheck(ctx, checkShard(key, shard)); err != nil {
		return storeapi.Announcement{}, false, fmt.Errorf("lockcore: memory get announcement: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.announced[storeapi.AnnouncementKey(key, shard)]
	if !ok {
		return storeapi.Announcement{}, false, nil
	}
	a.Answer = bytes.Clone(a.Answer)
	return a, true, nil
}

// annItemEvery: a crowded waiter reads the lock item at least on every
// annItemEvery-th poll and its announcement shard on the others, so that
// it still sees failures, take-overs and the success itself (which it then
// relays to its shard); after a shard read that had nothing new for it,
// the next poll reads the lock item, where a success nobody relayed yet
// is.
const annItemEvery = 4

// crowded reports whether the wait uses announcements: the store keeps
// them and throttled one of this wait's calls (the herd has outgrown the
// lock item), other than a read that a prediction added (see poll).
func (w *waiter) crowded() bool { return w.l.ann != nil && w.throttles > w.addedThrottles }

// announcementTurn reports whether the next poll reads the waiter's
// announcement shard rather than the lock item. The lock item keeps its
// own pace: after throttled reads of it in a row, its reads come that many
// doublings of the poll apart (up to 2^maxPaceShift polls), as a waiter's
// that reads only the item, and the polls between them read the shard;
// the reads the wait needs at once (an announced answer left out, an
// announcement of another episode) do not wait for it.
func (w *waiter) announcementTurn() bool {
	if !w.crowded() {
		return false
	}
	paced := w.itemPaced()
	w.turn++
	if w.needItem || (paced && w.turn%annItemEvery == 0) {
		w.needItem = false
		w.itemTurn = w.turn
		return false
	}
	return true
}

// itemPaced reports whether the next poll may read the lock item at its
// pace: at least 2^pace polls (at most 2^maxPaceShift, which is
// annItemEvery: the item is still read at least every annItemEvery-th
// poll) after the last read of it.
func (w *waiter) itemPaced() bool { return w.turn+1-w.itemTurn > 1<<min(w.pace, maxPaceShift)-1 }

// pollAnnouncement reads the waiter's shard once, within one call timeout
// (see calltimeout.go); done is true when it shows a success the wait may take (see
// accepts), and res is then the Released result.
func (w *waiter) pollAnnouncement() (res WaitResult, done bool) {
	l := w.l
	var a storeapi.Announcement
	var found bool
	err := l.timedCall(w.callCtx, time.Time{}, func(ctx context.Context) (err error) {
		a, found, err = l.ann.GetAnnouncement(ctx, l.key, w.shard)
		return err
	})
	w.polls++
	switch {
	case err != nil:
		if isThrottled(err) {
			w.throttles++
			w.annPace++
			l.count(metricLockThrottled, 1)
		}
		w.note(err)
		return res, false
	case !found || a.Fence <= w.annFence:
		// Nothing new on the shard: the success, if any, is on the lock
		// item only (nobody relayed it yet), so the next poll reads it,
		// when the item's pace allows (see announcementTurn).
		w.annPace = 0
		w.needItem = w.itemPaced()
		return res, false
	}
	w.annPace = 0
	w.annFence = a.Fence
	if !w.accepts(a) {
		w.needItem = true // an earlier episode's: the lock item tells what this wait waits for
		return res, false
	}
	if a.AnswerOmitted {
		w.needItem = true // the answer is on the lock item only
		return res, false
	}
	l.count(metricLockNotReleased, 0)
	l.count(metricAnnouncementRead, 1)
	return WaitResult{Outcome: Released, Fence: a.Fence, ResultRef: a.ResultRef, Answer: a.Answer, Announced: true,
		ReleasedAt: msTime(a.ReleasedAtMs)}, true
}

// accepts reports whether the announced success a was published during
// this wait (see ours) and is not older than a fence the wait saw on the
// lock item: a later holder seen, holding or released (a failure above
// all), makes it stale news, and the lock item tells what the wait waits
// for. A late copy that held the key for nobody (see nobodys) is no
// holder: a success it landed over is still the wait's answer, and the
// announcement may be the one place that still shows it.
func (w *waiter) accepts(a storeapi.Announcement) bool {
	return !(w.seen && a.Fence < w.holderFence) && w.ours(a.Fence, a.ReleasedAtMs)
}

// relay copies the success it, just read from the lock item, to the
// waiter's shard when the wait is crowded and the shard did not show it;
// when that copy was the first (applied), to every other shard too, at
// once, so that each success costs about one write per shard however many
// waiters relay it. A failed relay costs the others only time: they read
// the lock item too.
func (w *waiter) relay(it storeapi.Item) {
	if !w.crowded() {
		return
	}
	a, ok := announcementOf(it, w.shard)
	if !ok || a.Fence <= w.annFence {
		return
	}
	l := w.l
	ctx, cancel := context.WithTimeout(w.callCtx, l.callTimeout())
	defer cancel()
	applied, err := l.ann.Announce(ctx, a)
	l.logAt(slog.LevelDebug, "lock success relayed to an announcement", slog.Int("shard", w.shard),
		slog.Int64("fence", a.Fence), slog.Bool("applied", applied), slog.Any("error", err))
	if err != nil || !applied {
		return
	}
	w.annFence = a.Fence
	var wg sync.WaitGroup
	var written atomic.Int64
	written.Add(1)
	for shard := range l.o.announceShards {
		if shard == w.shard {
			continue
		}
		wg.Go(func() {
			b := a
			b.Shard = shard
			if ok, err := l.ann.Announce(ctx, b); ok && err == nil {
				written.Add(1)
			}
		})
	}
	wg.Wait()
	l.count(metricAnnouncementWrite, float64(written.Load()))
}
