package idempotency

import (
	"container/list"
	"fmt"
	"sync"
	"time"
)

// Cache is a process-local cache of completed answers, bounded by entries
// and by bytes, least recently used first out (see [WithCache]). It holds
// only answers that were completed and, for a replay, whose fingerprint
// matched; an entry is dropped at its record's expiry. A hit is checked
// against the event's fingerprint like a replay from the store. It is
// safe for concurrent use and may be shared by many operations, each of
// which has entries of its own: one never replays another's.
type Cache struct {
	maxEntries int
	maxBytes   int

	mu    sync.Mutex               // guards the fields below
	bytes int                      // sum of the entries' sizes
	order *list.List               // of *cacheEntry, most recently used first
	byKey map[string]*list.Element // into order
}

// cacheEntry is one record, encoded, so that every hit decodes a copy of
// its own.
type cacheEntry struct {
	key     string
	stored  []byte
	expires time.Time // the record's expiry, on the clock of time.Now; fresh up to it, included
}

func (e *cacheEntry) size() int { return len(e.key) + len(e.stored) }

// NewCache returns a cache of at most maxEntries answers and maxBytes
// bytes (keys and encoded answers). Both must be positive; an answer
// larger than maxBytes is never cached.
func NewCache(maxEntries, maxBytes int) (*Cache, error) {
	if maxEntries < 1 || maxBytes < 1 {
		return nil, fmt.Errorf("%w: NewCache: %d entries and %d bytes, both must be positive", errConfig, maxEntries, maxBytes)
	}
	return &Cache{maxEntries: maxEntries, maxBytes: maxBytes, order: list.New(), byKey: map[string]*list.Element{}}, nil
}

// get returns the stored record of key, unless it has expired.
func (c *Cache) get(key string, now time.Time) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byKey[key]
	if !ok {
		return nil, false
	}
	e := el.Value.(*cacheEntry)
	if now.After(e.expires) { // as the store's condition: fresh at the expiry itself
		c.remove(el)
		return nil, false
	}
	c.order.MoveToFront(el)
	return e.stored, true
}

// put keeps stored as key's record until expires, evicting the least
// recently used entries over the bounds.
func (c *Cache) put(key string, stored []byte, expires time.Time) {
	e := &cacheEntry{key: key, stored: stored, expires: expires}
	if e.size() > c.maxBytes {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byKey[key]; ok {
		c.remove(el)
	}
	c.byKey[key] = c.order.PushFront(e)
	c.bytes += e.size()
	for c.order.Len() > c.maxEntries || c.bytes > c.maxBytes {
		c.remove(c.order.Back())
	}
}

// remove drops el; c.mu is held.
func (c *Cache) remove(el *list.Element) {
	e := c.order.Remove(el).(*cacheEntry)
	delete(c.byKey, e.key)
	c.bytes -= e.size()
}
