package lockcore

import (
	"sync"
	"time"
)

// DefaultHotKeys is how many keys a [HotKeys] made by a store remembers.
const DefaultHotKeys = 1024

// HotKeys remembers which lock keys the Locks sharing it found hot: an
// acquire write refused over a live holder or a fresh success, or a
// throttled acquire or read. While a key is hot,
// [Lock.TryAcquireElseWaitForRelease] reads the item before it writes, as
// with [WithReadFirst]: a herd's later invocations learn from one read
// (1 RCU, against 1 WCU for a refused write) that the lock is held or that
// its success is published, and write only when the read shows the lock
// free. A key stays hot for the lease or the fresh-success window
// ([WithFreshSuccess]), whichever is longer, after it was last found hot,
// and is forgotten as soon as a read shows the lock free. A key that was
// never found hot costs nothing: its first request is the conditional
// write.
//
// A new HotKeys knows nothing yet, and new execution environments appear
// when concurrency rises, that is, in herds: Lambda starts them when no
// warm one is free, up to 1000 a function every 10 seconds. So the first
// TryAcquireElseWaitForRelease made through a HotKeys, whatever its key,
// reads first as on a hot key. A herd of new environments then spends
// read capacity (3000 RCU a second on one item) rather than the item's
// 1000 WCU, which refused writes used up within the first second of a
// burst of 3000. That first call of an environment costs one read more
// when the lock is free (two requests, not one); every later one is back
// to the conditional write.
//
// HotKeys also remembers the revisions of the last acquires its Locks'
// calls gave up as they returned (an acquire of unknown outcome that
// failed the call with [ReasonStore], a wait's attempts that did not
// acquire): a late copy of one may still land and hold the key for nobody,
// and a later call that reads the item held by one of them frees it at
// once instead of taking it over after a lease.
//
// [DynamoStore] and [MemoryStore] each keep one, shared by every Lock on
// the store (see [WithHotKeys]); in Lambda the store lives as long as the
// execution environment, so the invocations it serves one after another
// share it. HotKeys is safe for concurrent use; its zero value remembers
// up to [DefaultHotKeys] keys.
type HotKeys struct {
	mu     sync.Mutex
	max    int               // 0: DefaultHotKeys
	keys   map[Key]time.Time // monotonic: hot until then; nil when empty
	served bool              // its first TryAcquireElseWaitForRelease was made (see first)
	lost   []lostAttempt     // acquires given up on with an unknown outcome, the latest last (see lostattempt.go)
}

// NewHotKeys returns an empty HotKeys remembering at most n keys (at
// least 1): when it is full, expired keys are forgotten first, then the
// one whose hot time ends soonest.
func NewHotKeys(n int) *HotKeys {
	return &HotKeys{max: max(n, 1), keys: make(map[Key]time.Time)}
}

// mark makes k hot until until (never shortening an earlier mark).
func (h *HotKeys) mark(k Key, until time.Time) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if old, ok := h.keys[k]; ok {
		if until.After(old) {
			h.keys[k] = until
		}
		return
	}
	if h.keys == nil {
		h.keys = make(map[Key]time.Time)
	}
	limit := h.max
	if limit == 0 {
		limit = DefaultHotKeys
	}
	if len(h.keys) >= limit {
		h.evict(time.Now())
	}
	h.keys[k] = until
}

// evict forgets every expired key, or, when none has expired, the key
// whose hot time ends soonest. The caller holds mu.
func (h *HotKeys) evict(now time.Time) {
	var soonest Key
	var soonestAt time.Time
	n := len(h.keys)
	for k, until := range h.keys {
		if !until.After(now) {
			delete(h.keys, k)
			continue
		}
		if soonestAt.IsZero() || until.Before(soonestAt) {
			soonest, soonestAt = k, until
		}
	}
	if len(h.keys) == n && !soonestAt.IsZero() {
		delete(h.keys, soonest)
	}
}

// hot reports whether k is hot at now.
func (h *HotKeys) hot(k Key, now time.Time) bool {
	if h == nil {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	until, ok := h.keys[k]
	if ok && !until.After(now) {
		delete(h.keys, k)
		return false
	}
	return ok
}

// first reports whether this is the first call of TryAcquireElseWaitForRelease
// made through h: true exactly once (false on a nil h).
func (h *HotKeys) first() bool {
	if h == nil {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	f := !h.served
	h.served = true
	return f
}

// forget makes k cold.
func (h *HotKeys) forget(k Key) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.keys, k)
}

// hotKeyed is a Store that keeps a HotKeys for the Locks on it.
type hotKeyed interface {
	hotKeys() *HotKeys
}

// markHot notes that the Lock found its key hot: for the lease or the
// fresh-success window, whichever is longer.
func (l *Lock) markHot() {
	l.hot.mark(l.key, time.Now().Add(max(l.o.lease, l.o.freshSuccess)))
}

// readsFirst reports whether TryAcquireElseWaitForRelease starts with a
// read: [WithReadFirst], the first call made through the memory of hot keys
// (a new execution environment's), or the key is hot.
func (l *Lock) readsFirst() bool {
	return l.o.readFirst || l.hot.first() || l.hot.hot(l.key, time.Now())
}

// noteFirst updates the memory of hot keys after the first request of
// TryAcquireElseWaitForRelease was a read that led to step: a held lock, a
// published success or a throttle keep the key hot; a served read that
// found the lock free makes it cold (an acquire that succeeds at once
// changes nothing: an uncontended key was never hot).
func (l *Lock) noteFirst(step firstStep, err error) {
	switch {
	case step != stepAcquire:
		l.markHot()
	case err == nil:
		l.hot.forget(l.key)
	}
}
