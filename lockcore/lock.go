package lockcore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/herdlock/herdlock/lockcore/storeapi"
)

// Params names a lock and the invocation that uses it. LockID, LockGroup and
// HolderName must not be blank; AccountID and AppID must be positive.
type Params struct {
	LockID    string
	LockGroup string
	// HolderName identifies the holder in the stored item, for diagnostics
	// only: ownership is decided by the revision.
	HolderName string
	AccountID  int64
	AppID      int64
	// RemainingTime reports how long the invocation has left to hold and to
	// wait. When set, the maximum hold is min(RemainingTime(), the maximum
	// hold option), and waiting never outlasts it. Nil means no invocation
	// limit. Release is bounded by its context's deadline and by
	// [StoreCalls].ReleaseTimeout, so a Lambda middleware passes the time to the
	// deadline minus its safety margin here.
	RemainingTime func() time.Duration
}

// Lock is a lease lock on one DynamoDB item (or any [storeapi.Store]). One Lock is
// meant for one invocation: it holds at most one lease at a time. Its methods
// are safe for concurrent use.
type Lock struct {
	store         storeapi.Store
	key           Key
	owner         string
	recordAccount string
	remaining     func() time.Duration
	o             options
	hot           *HotKeys           // nil: no memory of hot keys
	ann           storeapi.Announcer // nil: no announcements
	rtt           *latency           // the store's round trips (see calltimeout.go)

	mu   sync.Mutex // guards hold and last
	hold *hold      // the current hold, nil when the lock is not held
	last *hold      // the most recent hold, for Context after release
}

// New returns a Lock on store for the lock named by p. It returns an error
// matching [ErrConfig] naming every blank field, a non-positive account or
// app id, a nil store (also a typed nil, see [CheckStore]), or an invalid
// option. A lease below the minimum lease is raised to
// it with a warning.
func New(store storeapi.Store, p Params, opts ...Option) (*Lock, error) {
	var blank []string
	if strings.TrimSpace(p.LockID) == "" {
		blank = append(blank, "LockID")
	}
	if strings.TrimSpace(p.LockGroup) == "" {
		blank = append(blank, "LockGroup")
	}
	if strings.TrimSpace(p.HolderName) == "" {
		blank = append(blank, "HolderName")
	}
	var errs []error
	if len(blank) > 0 {
		errs = append(errs, fmt.Errorf("lockcore: these fields must not be blank: %s", strings.Join(blank, ", ")))
	}
	if p.AccountID <= 0 {
		errs = append(errs, fmt.Errorf("lockcore: AccountID must be positive, got %d", p.AccountID))
	}
	if p.AppID <= 0 {
		errs = append(errs, fmt.Errorf("lockcore: AppID must be positive, got %d", p.AppID))
	}
	if err := CheckStore(store); err != nil {
		errs = append(errs, err)
	}
	o := defaultOptions()
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	if err := o.validate(); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return nil, &configError{errors.Join(errs...)}
	}
	if o.logger == nil {
		o.logger = slog.Default()
	}
	l := &Lock{
		store:         store,
		key:           Key{Group: p.LockGroup, ID: p.LockID},
		owner:         p.HolderName,
		recordAccount: fmt.Sprintf("act:%d/app:%d", p.AccountID, p.AppID),
		remaining:     p.RemainingTime,
		o:             o,
		hot:           o.hotKeys,
		rtt:           latencyOf(store),
	}
	if hk, ok := store.(hotKeyed); ok && !o.hotKeysSet {
		l.hot = hk.hotKeys()
	}
	if o.announceShards > 0 {
		l.ann = announcerOf(store)
	}
	if o.lease < o.minLease {
		l.logAt(slog.LevelWarn, "lock lease below minimum, raised",
			slog.Duration("requested", o.lease), slog.Duration("effective", o.minLease))
		l.o.lease = o.minLease
	}
	return l, nil
}

// LockID returns the lock's id.
func (l *Lock) LockID() string { return l.key.ID }

// LockGroup returns the lock's group.
func (l *Lock) LockGroup() string { return l.key.Group }

// HolderName returns the holder name written to the item (Params.HolderName).
func (l *Lock) HolderName() string { return l.owner }

// Key returns the lock's key.
func (l *Lock) Key() Key { return l.key }

// RecordAccount returns "act:{accountId}/app:{appId}", as stored on the item.
func (l *Lock) RecordAccount() string { return l.recordAccount }

// Lease returns the effective lease length.
func (l *Lock) Lease() time.Duration { return l.o.lease }

// MaxWait returns the longest TryAcquireElseWaitForRelease waits
// ([WithMaxWait]), before ctx's deadline and Params.RemainingTime shorten
// it.
func (l *Lock) MaxWait() time.Duration { return l.o.maxWait }

// FreshSuccess returns the fresh-success window (see [WithFreshSuccess]).
func (l *Lock) FreshSuccess() time.Duration { return l.o.freshSuccess }

// HasLock reports whether the lock is held: acquired, and neither released
// nor lost.
func (l *Lock) HasLock() bool { return l.current() != nil }

// Revision returns the revision of the current hold, or "" when not held.
func (l *Lock) Revision() string {
	if h := l.current(); h != nil {
		return h.revision
	}
	return ""
}

// Fence returns the fencing token of the current hold, or 0 when not held.
// Send it with every write to the protected resource, and have the resource
// refuse writes with a fence below the highest it has seen.
func (l *Lock) Fence() int64 {
	if h := l.current(); h != nil {
		return h.fence
	}
	return 0
}

// TookOver reports whether the current hold was taken over by a waiter from
// an abandoned lease (see [WaitResult].TookOver).
func (l *Lock) TookOver() bool {
	if h := l.current(); h != nil {
		return h.tookOver
	}
	return false
}

// AfterFailure reports whether the current hold was acquired after its
// previous holder released the lock as a [Failure] (see
// [WaitResult].AfterFailure).
func (l *Lock) AfterFailure() bool {
	if h := l.current(); h != nil {
		return h.afterFailure
	}
	return false
}

// HasRenewal reports whether auto-renewal is running.
func (l *Lock) HasRenewal() bool {
	if h := l.current(); h != nil {
		return h.renewing()
	}
	return false
}

// Valid reports whether the lease is still valid by this process's monotonic
// clock. Check it right before each side effect: after a freeze, timers fire
// late, and the context alone may not have been cancelled yet.
func (l *Lock) Valid() bool {
	h := l.current()
	return h != nil && h.valid(time.Now()) && h.ctx.Err() == nil
}

// Context returns the holder's context. It is cancelled, with a cause
// readable through [context.Cause], when the lease is lost
// ([ErrLeaseLost]), the maximum hold is reached ([ErrMaxHoldReached]),
// TriggerAbort is called ([ErrAborted]), the lock is released
// ([ErrReleased]), or the context given to Acquire ends. Before the first
// acquisition it returns a context already cancelled with [ErrNotHeld].
func (l *Lock) Context() context.Context {
	l.mu.Lock()
	h := l.last
	l.mu.Unlock()
	if h == nil {
		ctx, cancel := context.WithCancelCause(context.Background())
		cancel(ErrNotHeld)
		return ctx
	}
	return h.ctx
}

// CancelAutoRenewal stops renewing without releasing the lock. The holder's
// context is still cancelled when the lease it has runs out.
func (l *Lock) CancelAutoRenewal() {
	if h := l.current(); h != nil {
		h.setFlags(func(h *hold) { h.renewOn = false })
	}
}

// TriggerAbort cancels the holder's context with [ErrAborted]. It does not
// release the lock: call Release for that.
func (l *Lock) TriggerAbort() {
	if h := l.current(); h != nil {
		h.cancel(ErrAborted)
	}
}

// CheckForStaleLock reads the item and reports whether the lock this Lock
// holds is stale: the item is gone, released, or carries another revision.
// It reports true when the lock is not held.
func (l *Lock) CheckForStaleLock(ctx context.Context) (bool, error) {
	h := l.current()
	if h == nil {
		return true, nil
	}
	it, found, err := l.store.Get(ctx, l.key)
	if err != nil {
		return false, fmt.Errorf("lockcore: check for stale lock: %w", err)
	}
	return !found || it.Revision != h.revision || it.Released, nil
}

func (l *Lock) current() *hold {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.hold
}

// drop forgets h if it is still the current hold, and cancels its context
// with cause.
func (l *Lock) drop(h *hold, cause error) {
	l.mu.Lock()
	if l.hold == h {
		l.hold = nil
	}
	l.mu.Unlock()
	h.cancel(cause)
}

// maxHold returns the hard maximum for a new hold.
func (l *Lock) maxHold() time.Duration {
	d := l.o.maxHold
	if l.remaining != nil {
		d = min(d, l.remaining())
	}
	return d
}

// renewInterval returns max(floor, lease/3).
func (l *Lock) renewInterval() time.Duration { return max(l.o.renewFloor, l.o.lease/3) }

// validityMargin is what the holder subtracts from its lease so it stops
// before any waiter could take over: max(100ms, 2% of the lease, ρ·lease).
// The model check (model/) shows a margin below ρ·lease lets a holder with
// a slow clock overlap a waiter with a fast one.
func (l *Lock) validityMargin() time.Duration {
	return max(100*time.Millisecond, l.o.lease/50, time.Duration(float64(l.o.lease)*l.o.drift))
}

// logAt logs msg with the lock's group and id, building nothing when the
// level is disabled.
func (l *Lock) logAt(level slog.Level, msg string, attrs ...slog.Attr) {
	ctx := context.Background()
	if !l.o.logger.Enabled(ctx, level) {
		return
	}
	all := make([]slog.Attr, 0, len(attrs)+2)
	all = append(all, slog.String("lockGroup", l.key.Group), slog.String("lockId", l.key.ID))
	l.o.logger.LogAttrs(ctx, level, msg, append(all, attrs...)...)
}

func (l *Lock) nowMs() int64 { return l.o.clock.Now().UnixMilli() }

func (l *Lock) count(name string, v float64) { l.o.metrics.AddMetric(name, unitCount, v) }

func (l *Lock) millis(name string, d time.Duration) {
	l.o.metrics.AddMetric(name, unitMilliseconds, float64(d)/float64(time.Millisecond))
}

func newRevision() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b[:])
}
