package lockcore

import "errors"

// Acquires a call gave up on.
//
// An acquire whose outcome is unknown (a 5xx, a reset connection) and that
// its settling read found not applied, or could not settle, ends its call
// with [ReasonStore]. A copy of it may still be on its way (a request held
// up in the network, the store's own retry) and land after the call
// returned, on a free lock: guard D does not stop it, because the item
// never carried its revision, and it holds the key for nobody. Nobody
// renews it, so every later call would watch it for a lease and take it
// over, counted as a take-over, and the key would be held by nobody
// meanwhile. So may a copy of a wait's refused or throttled attempt that
// lands after the wait returned (see ownattempt.go).
//
// So the call leaves those revisions in the memory its execution
// environment shares (the store's [HotKeys]), and a later wait of any Lock
// there that reads the item held by one of them frees it with a failure
// release conditioned on that revision and keeping the episode (as settle
// frees a ghost), and races for the lock at once, without counting a
// take-over. That is right whenever the copy lands: the call that sent it
// has returned and never holds it, so the revision is held by nobody, and
// the release can free nothing else. Only a call that has returned leaves
// a revision there, and never the one it holds: a wait that goes on after
// a store error may still hold a late copy of its own attempt (see
// ownattempt.go), which another Lock must not free under it.
//
// Only the environment that gave an acquire up knows its revision: in
// another one, a late copy of it is taken over after a lease, as a crashed
// holder's is.

// maxLost bounds the revisions a HotKeys remembers: a copy lands within the
// network's and the store's retries of its attempt, long before an
// environment has given up on many more acquires.
const maxLost = 64

// lostAttempt is an acquire of key, with revision, that a call gave up on.
type lostAttempt struct {
	key      Key
	revision string
}

// giveUp remembers revision, an acquire of k that a call gave up on.
func (h *HotKeys) giveUp(k Key, revision string) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.lost) == maxLost {
		h.lost = append(h.lost[:0], h.lost[1:]...)
	}
	h.lost = append(h.lost, lostAttempt{key: k, revision: revision})
}

// gaveUp reports whether revision is an acquire of k that a call gave up
// on.
func (h *HotKeys) gaveUp(k Key, revision string) bool {
	if h == nil {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, a := range h.lost {
		if a.key == k && a.revision == revision {
			return true
		}
	}
	return false
}

// forgetLost forgets revision of k, once its copy was freed: guard D
// refuses any other copy of it now that the item carries it.
func (h *HotKeys) forgetLost(k Key, revision string) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for i, a := range h.lost {
		if a.key == k && a.revision == revision {
			h.lost = append(h.lost[:i], h.lost[i+1:]...)
			return
		}
	}
}

// giveUpTries leaves the wait's attempts that did not acquire to the
// memory its environment shares, as the wait returns: all of them but the
// one whose late copy it holds, if it does.
func (w *waiter) giveUpTries() {
	held := w.l.Revision()
	for _, a := range w.tried.list {
		if a.revision != held {
			w.l.hot.giveUp(w.l.key, a.revision)
		}
	}
}

// giveUp leaves the revision of the acquire that err, from a call of
// acquire that is about to return it, gave up on with an unknown outcome
// (a [ReasonStore] error) to the memory its environment shares.
func (l *Lock) giveUp(err error) {
	var ae *AcquireError
	if errors.As(err, &ae) && ae.Reason == ReasonStore && ae.Revision != "" {
		l.hot.giveUp(l.key, ae.Revision)
	}
}
