package lockcore

import (
	"sync"
	"time"
)

// defaultHotKeys is how many keys a [HotKeys] made by a store remembers.
const defaultHotKeys = 1024

// HotKeys is the memory of which lock keys are hot, shared by the Locks on
// one store. Every key is taken to be hot, and
// [Lock.TryAcquireElseWaitForRelease] reads the item before it writes, as
// with [Herd].ReadFirst, unless this memory found the key free recently:
// a TryAcquireElseWaitForRelease through it acquired the key at once (not
// after a wait or a published failure). Such a key is cold for the lease
// or the fresh-success window ([WithFreshSuccess]), whichever is longer,
// after that acquire: its first request is then the conditional write, one
// request when the lock is still free. A write refused over a live holder
// or a fresh success, or a throttled acquire or read, makes the key hot at
// once.
//
// Nothing local tells a herd's invocation that its key is hot before it
// asks: in a Lambda function that serves other keys besides a burst on
// one, each invocation of the burst runs in an environment whose earlier
// calls were on other keys, new or warm. Reading first, the burst spends
// the item's read capacity (3000 RCU a second, 1 RCU for a strongly
// consistent read of a lock item) to learn that the lock is held or that
// its success is published, instead of its write capacity (1000 WCU a
// second, 1 WCU for a refused write), which a burst of 3000 uses up
// within its first second, and is then throttled on the item's partition,
// beside every other lock key stored there. The price is one strongly consistent read (1 RCU) and
// one round trip more when the lock is free and this memory has not seen
// the key free within that window: two requests instead of one.
//
// HotKeys also remembers the revisions of the last acquires its Locks'
// calls gave up as they returned (an acquire of unknown outcome that
// failed the call with [ReasonStore], a wait's attempts and an
// [Lock.Acquire] that did not acquire): a late copy of one may still land and hold the key for nobody,
// and a later call that reads the item held by one of them frees it at
// once instead of taking it over after a lease.
//
// [DynamoStore] and [MemoryStore] each keep one, shared by every Lock on
// the store (see [Herd].HotKeys); in Lambda the store lives as long as the
// execution environment, so the invocations it serves one after another
// share it. HotKeys is safe for concurrent use; its zero value remembers
// up to [defaultHotKeys] keys.
type HotKeys struct {
	mu   sync.Mutex
	max  int               // 0: defaultHotKeys
	keys map[Key]time.Time // monotonic: found free, cold until then; nil when empty
	lost []lostAttempt     // acquires given up on with an unknown outcome, the latest last (see lostattempt.go)
}

// NewHotKeys returns an empty HotKeys remembering at most n cold keys (at
// least 1): when it is full, expired keys are forgotten first, then the
// one whose cold time ends soonest. A forgotten key is hot.
func NewHotKeys(n int) *HotKeys {
	return &HotKeys{max: max(n, 1), keys: make(map[Key]time.Time)}
}

// cool makes k cold until until.
func (h *HotKeys) cool(k Key, until time.Time) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.keys[k]; ok {
		h.keys[k] = until
		return
	}
	if h.keys == nil {
		h.keys = make(map[Key]time.Time)
	}
	limit := h.max
	if limit == 0 {
		limit = defaultHotKeys
	}
	if len(h.keys) >= limit {
		h.evict(time.Now())
	}
	h.keys[k] = until
}

// evict forgets every expired key, or, when none has expired, the key
// whose cold time ends soonest. The caller holds mu.
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

// cold reports whether k was found free and is still cold at now (false
// on a nil h).
func (h *HotKeys) cold(k Key, now time.Time) bool {
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

// forget makes k hot.
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

// markHot notes that the Lock found its key hot: the next call reads
// first.
func (l *Lock) markHot() { l.hot.forget(l.key) }

// markCold notes that the Lock acquired its key at once: for the lease or
// the fresh-success window, whichever is longer, the next call writes
// first.
func (l *Lock) markCold() {
	l.hot.cool(l.key, time.Now().Add(max(l.o.lease, l.o.freshSuccess)))
}

// readsFirst reports whether TryAcquireElseWaitForRelease starts with a
// read: [Herd].ReadFirst, or a memory of hot keys that has not found the
// key free recently. Without a memory ([Herd].NoHotKeys) it writes
// first.
func (l *Lock) readsFirst() bool {
	return l.o.readFirst || (l.hot != nil && !l.hot.cold(l.key, time.Now()))
}
