package lockcore

import (
	"bytes"
	"context"
	"fmt"
	"sync"

	"github.com/herdlock/herdlock/lockcore/storeapi"
)

// MemoryStore is a [storeapi.Store] that keeps its items in process memory, with the
// same conditions, the same limits and the same returned items as
// [DynamoStore]. It is meant for tests of the lock algorithm and for local
// runs: nothing survives the process, and only goroutines of one process
// can share a lock through it.
//
// MemoryStore starts no goroutines and uses no timers; every method returns
// without blocking on anything but its mutex, so it works inside
// testing/synctest bubbles. The zero value is not usable: call
// [NewMemoryStore].
//
// MemoryStore is safe for concurrent use.
type MemoryStore struct {
	mu    sync.Mutex                // guards items
	items map[string]*storeapi.Item // by PartitionKey; each value owned by the store
	hot   *HotKeys                  // the Locks' memory of hot keys (see HotKeys); not part of any item

	announced map[string]storeapi.Announcement // by AnnouncementKey; guarded by mu

	lat latency // the Locks' estimate of the round trips (see calltimeout.go); not part of any item
}

var (
	_ storeapi.Store     = (*MemoryStore)(nil)
	_ storeapi.Announcer = (*MemoryStore)(nil)
)

// NewMemoryStore returns an empty MemoryStore.
func NewMemoryStore() *MemoryStore {
	return &MemoryStore{items: make(map[string]*storeapi.Item), hot: NewHotKeys(defaultHotKeys)}
}

func (s *MemoryStore) hotKeys() *HotKeys { return s.hot }

func (s *MemoryStore) latency() *latency { return &s.lat }

// Acquire implements [storeapi.Store.Acquire].
func (s *MemoryStore) Acquire(ctx context.Context, req storeapi.AcquireRequest) (storeapi.Item, error) {
	if err := memCheck(ctx, checkAcquireRequest(req)); err != nil {
		return storeapi.Item{}, fmt.Errorf("lockcore: memory acquire: %w", err)
	}
	pk := storeapi.PartitionKey(req.Key)
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, found := s.items[pk]
	if found && !acquirable(cur, req) {
		if cur.Revision == req.Revision && !cur.Released {
			// An earlier attempt of this request was applied: in one
			// process only when the caller repeats a request itself.
			return cloneItem(*cur), nil
		}
		return storeapi.Item{}, &storeapi.ConditionError{Op: "acquire", Current: ptr(cloneItem(*cur))}
	}
	it := acquired(cur, req)
	if err := checkItemSize(it); err != nil {
		return storeapi.Item{}, fmt.Errorf("lockcore: memory acquire: %w", err)
	}
	s.items[pk] = &it
	return cloneItem(it), nil
}

// acquired returns the item an applied Acquire of req writes over cur (nil
// when there is none).
func acquired(cur *storeapi.Item, req storeapi.AcquireRequest) storeapi.Item {
	it := storeapi.Item{
		Key:           req.Key,
		Holder:        req.Holder,
		Revision:      req.Revision,
		Fence:         req.FenceBase + 1,
		Lease:         req.Lease,
		HeartbeatAtMs: req.NowMs,
		AcquiredAtMs:  req.NowMs,
		LeaseUntilMs:  req.LeaseUntilMs,
		ExpiresAtMs:   req.ExpiresAtMs,
		RecordAccount: req.RecordAccount,
		TTL:           req.TTL,
	}
	if cur != nil {
		it.Fence = cur.Fence + 1
		it.PrevRevision, it.PrevResult, it.PrevFailReason = cur.Revision, cur.Result, cur.FailReason
		it.PublishedRevision, it.PublishedResult = cur.PublishedRevision, cur.PublishedResult
		it.Failures, it.NotBeforeMs = cur.Failures, cur.NotBeforeMs
		it.FailReason, it.FailRecentUntilMs = cur.FailReason, cur.FailRecentUntilMs
		it.HoldMeanMs, it.HoldDevMs = cur.HoldMeanMs, cur.HoldDevMs
	}
	return it
}

// acquirable reports whether the Acquire condition holds for an existing
// item cur: the branches (A), guarded by (B), (C) and (D), of
// [storeapi.Store.Acquire].
func acquirable(cur *storeapi.Item, req storeapi.AcquireRequest) bool {
	open := cur.Released
	if req.UseWallClock {
		limit := req.NowMs - req.ClockAllowance.Milliseconds()
		open = open || cur.ExpiresAtMs < limit || cur.LeaseUntilMs < limit
	}
	if o := req.Observed; o != nil {
		open = open || (cur.Revision == o.Revision && cur.Beat == o.Beat)
	}
	return open && !freshSuccess(cur, req) && !heldBackFailure(cur, req) && cur.Revision != req.Revision &&
		cur.PrevRevision != req.Revision
}

// freshSuccess is guard (B) of [storeapi.Store.Acquire].
func freshSuccess(cur *storeapi.Item, req storeapi.AcquireRequest) bool {
	return req.FreshSuccessSinceMs != 0 && cur.Released && cur.Result == Success &&
		cur.ReleasedAtMs >= req.FreshSuccessSinceMs
}

// heldBackFailure is guard (C) of [storeapi.Store.Acquire].
func heldBackFailure(cur *storeapi.Item, req storeapi.AcquireRequest) bool {
	return req.MaxAttempts > 0 && cur.Released && cur.Result == Failure && cur.FailRecentUntilMs > req.NowMs &&
		cur.NotBeforeMs > req.NowMs
}

// Renew implements [storeapi.Store.Renew].
func (s *MemoryStore) Renew(ctx context.Context, req storeapi.RenewRequest) (storeapi.Item, error) {
	if err := memCheck(ctx, checkRenewRequest(req)); err != nil {
		return storeapi.Item{}, fmt.Errorf("lockcore: memory renew: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := s.items[storeapi.PartitionKey(req.Key)]
	if cur == nil || cur.Revision != req.Revision || cur.Released {
		return storeapi.Item{}, &storeapi.ConditionError{Op: "renew", Current: clonePtr(cur)}
	}
	cur.HeartbeatAtMs = req.NowMs
	cur.LeaseUntilMs = max(cur.LeaseUntilMs, req.LeaseUntilMs)
	cur.Beat++
	return cloneItem(*cur), nil
}

// Release implements [storeapi.Store.Release].
func (s *MemoryStore) Release(ctx context.Context, req storeapi.ReleaseRequest) (storeapi.Item, error) {
	if err := memCheck(ctx, checkReleaseRequest(req)); err != nil {
		return storeapi.Item{}, fmt.Errorf("lockcore: memory release: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := s.items[storeapi.PartitionKey(req.Key)]
	if cur == nil || cur.Revision != req.Revision || (cur.Released && !replacesHolderFailure(*cur, req)) {
		if cur != nil && (releasedAlready(*cur, req) || ownPublication(*cur, req) || recordedPublication(*cur, req)) {
			return cloneItem(*cur), nil
		}
		return storeapi.Item{}, &storeapi.ConditionError{Op: "release", Current: clonePtr(cur)}
	}
	it := released(*cur, req)
	if err := checkItemSize(it); err != nil {
		return storeapi.Item{}, fmt.Errorf("lockcore: memory release: %w", err)
	}
	*cur = it
	return cloneItem(it), nil
}

// overOperator reports whether req is a holder's Failure release that would
// overwrite an operator's release of cur (see [storeapi.OperatorReleaseReason]). An
// item whose record of the last publication names req's revision was not
// released by an operator since (an operator's release clears the record):
// the operator's reason on it is the one req's holder kept, acquiring over
// an operator's release and releasing a failure that keeps the episode
// ([storeapi.ReleaseRequest].KeepEpisode), which writes no reason of its own.
func overOperator(cur storeapi.Item, req storeapi.ReleaseRequest) bool {
	return cur.Released && cur.Result == Failure && cur.FailReason == storeapi.OperatorReleaseReason &&
		req.Result == Failure && !byOperator(req) && cur.PublishedRevision != req.Revision
}

// replacesHolderFailure reports whether req is an operator's force-release
// and cur, of req's revision, released, its holder's failure release,
// which the operator's replaces (see [storeapi.OperatorReleaseReason]).
func replacesHolderFailure(cur storeapi.Item, req storeapi.ReleaseRequest) bool {
	return byOperator(req) && cur.Released && cur.Result == Failure && cur.FailReason != storeapi.OperatorReleaseReason
}

// releasedAlready reports whether cur, which failed req's condition, is
// req's revision released with req.Result by req itself: an earlier attempt
// was applied (its response lost), and its publication stands as it was
// written, ReleasedAtMs included. A holder's Failure release is not, when
// an operator released the revision (see overOperator).
func releasedAlready(cur storeapi.Item, req storeapi.ReleaseRequest) bool {
	return cur.Revision == req.Revision && cur.Released && cur.Result == req.Result && !overOperator(cur, req)
}

// released returns cur as an applied Release of req leaves it.
func released(cur storeapi.Item, req storeapi.ReleaseRequest) storeapi.Item {
	it := cur
	it.Released = true
	it.ReleasedAtMs = req.NowMs
	it.Result = req.Result
	it.ResultRef = req.ResultRef
	it.ResultFence = cur.Fence
	if req.HoldMeanMs > 0 {
		it.HoldMeanMs, it.HoldDevMs = req.HoldMeanMs, req.HoldDevMs
	}
	switch {
	case byOperator(req):
		it.PublishedRevision, it.PublishedResult = "", ""
	case !req.Unheld:
		it.PublishedRevision, it.PublishedResult = req.Revision, req.Result
	}
	if req.Result == Success {
		if len(req.Answer) > 0 {
			it.Answer = bytes.Clone(req.Answer)
		}
		it.Failures, it.NotBeforeMs, it.FailReason, it.FailRecentUntilMs = 0, 0, "", 0
		return it
	}
	if req.KeepEpisode {
		return it
	}
	it.Failures, it.NotBeforeMs = req.Failures, req.NotBeforeMs
	it.FailReason, it.FailRecentUntilMs = req.FailReason, req.FailRecentUntilMs
	return it
}

// ownPublication reports whether cur, which failed req's condition, shows
// that req was applied before a newcomer acquired the item. A holder's
// Failure release is not, when the release the newcomer replaced was the
// operator's: cur's PrevFailReason, copied by the newcomer's acquisition,
// is the operator's reason (and so is FailReason, on an item acquired
// before PrevFailReason was written, for as long as the newcomer holds,
// an acquisition keeping the reason of the release it replaced). The last
// release of req's revision was the operator's, which the holder's would
// not have overwritten (see overOperator), so the holder is told it lost
// its lease, as it is before a newcomer acquires, and also after the
// newcomer has released with a reason of its own.
func ownPublication(cur storeapi.Item, req storeapi.ReleaseRequest) bool {
	return cur.Revision != req.Revision && cur.PrevRevision == req.Revision && cur.PrevResult == req.Result &&
		!(req.Result == Failure && !byOperator(req) && replacedOperatorRelease(cur))
}

// recordedPublication reports whether cur, of another revision, which
// failed req's condition, records req as the last publication on the item
// (see [storeapi.Item].PublishedRevision): req was applied, and since then only
// acquisitions and the freeing of writes that nobody held have changed the
// item, however many. Only req's holder sends a release of its revision
// that is neither an operator's nor the freeing of a write nobody held,
// and an operator's force-release clears the record, so it never names a
// release that was not applied, nor a holder's failure an operator
// replaced.
func recordedPublication(cur storeapi.Item, req storeapi.ReleaseRequest) bool {
	return cur.Revision != req.Revision && cur.PublishedRevision == req.Revision && cur.PublishedResult == req.Result
}

// replacedOperatorRelease reports whether cur's acquisition replaced an
// operator's release (see ownPublication).
func replacedOperatorRelease(cur storeapi.Item) bool {
	return cur.PrevFailReason == storeapi.OperatorReleaseReason || cur.FailReason == storeapi.OperatorReleaseReason
}

// Get implements [storeapi.Store.Get].
func (s *MemoryStore) Get(ctx context.Context, key Key) (storeapi.Item, bool, error) {
	if err := memCheck(ctx, checkKey(key)); err != nil {
		return storeapi.Item{}, false, fmt.Errorf("lockcore: memory get: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := s.items[storeapi.PartitionKey(key)]
	if cur == nil {
		return storeapi.Item{}, false, nil
	}
	return cloneItem(*cur), true, nil
}

// memCheck refuses work on a done context, as a remote store would, and
// requests that failed their check.
func memCheck(ctx context.Context, check error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return check
}

// cloneItem returns a copy of it that shares no memory with it.
func cloneItem(it storeapi.Item) storeapi.Item {
	it.Answer = bytes.Clone(it.Answer)
	return it
}

// clonePtr returns a pointer to a copy of *it, or nil for nil.
func clonePtr(it *storeapi.Item) *storeapi.Item {
	if it == nil {
		return nil
	}
	return ptr(cloneItem(*it))
}

func ptr[T any](v T) *T { return &v }
