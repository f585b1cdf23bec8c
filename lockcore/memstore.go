package lockcore

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// MemoryStore is a [Store] that keeps its items in process memory, with the
// same conditions and the same returned items as [DynamoStore]. It is meant
// for tests of the lock algorithm and for local runs: nothing survives the
// process, and only goroutines of one process can share a lock through it.
//
// MemoryStore starts no goroutines and uses no timers; every method returns
// without blocking on anything but its mutex, so it works inside
// testing/synctest bubbles. The zero value is not usable: call
// [NewMemoryStore].
//
// MemoryStore is safe for concurrent use.
type MemoryStore struct {
	mu    sync.Mutex       // guards items
	items map[string]*Item // by PartitionKey; each value owned by the store
}

var _ Store = (*MemoryStore)(nil)

// NewMemoryStore returns an empty MemoryStore.
func NewMemoryStore() *MemoryStore {
	return &MemoryStore{items: make(map[string]*Item)}
}

// errEmptyRevision guards the revision equality tests: an empty revision
// would let a request match an item it did not write.
var errEmptyRevision = errors.New("empty revision")

// Acquire implements [Store.Acquire].
func (s *MemoryStore) Acquire(ctx context.Context, req AcquireRequest) (Item, error) {
	if err := memCheck(ctx, req.Revision); err != nil {
		return Item{}, fmt.Errorf("lockcore: memory acquire: %w", err)
	}
	pk := PartitionKey(req.Key)
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, found := s.items[pk]
	if found && !acquirable(cur, req) {
		if cur.Revision == req.Revision {
			// Cannot happen in one process (the first write's "response"
			// is never lost), but keep the contract literal.
			return *cur, nil
		}
		return Item{}, &ConditionError{Op: "acquire", Current: cloneItem(cur)}
	}
	fence := req.FenceBase
	if found {
		fence = cur.Fence
	}
	it := &Item{
		Key:           req.Key,
		Owner:         req.Owner,
		Revision:      req.Revision,
		Fence:         fence + 1,
		Lease:         req.Lease,
		HeartbeatAtMs: req.NowMs,
		LeaseUntilMs:  req.LeaseUntilMs,
		ExpiresAtMs:   req.ExpiresAtMs,
		RecordAccount: req.RecordAccount,
		TTL:           req.TTL,
	}
	s.items[pk] = it
	return *it, nil
}

// acquirable reports whether the Acquire condition holds for an existing
// item cur.
func acquirable(cur *Item, req AcquireRequest) bool {
	if cur.Released {
		fresh := req.FreshSuccessSinceMs != 0 && cur.Result == Success && cur.ReleasedAtMs >= req.FreshSuccessSinceMs
		return !fresh
	}
	if req.UseWallClock {
		limit := req.NowMs - req.ClockAllowance.Milliseconds()
		if cur.ExpiresAtMs < limit || cur.LeaseUntilMs < limit {
			return true
		}
	}
	if o := req.Observed; o != nil && cur.Revision == o.Revision && cur.Beat == o.Beat {
		return true
	}
	return false
}

// Renew implements [Store.Renew].
func (s *MemoryStore) Renew(ctx context.Context, req RenewRequest) (Item, error) {
	if err := memCheck(ctx, req.Revision); err != nil {
		return Item{}, fmt.Errorf("lockcore: memory renew: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := s.items[PartitionKey(req.Key)]
	if cur == nil || cur.Revision != req.Revision || cur.Released || cur.LeaseUntilMs > req.LeaseUntilMs {
		return Item{}, &ConditionError{Op: "renew", Current: cloneItem(cur)}
	}
	cur.HeartbeatAtMs = req.NowMs
	cur.LeaseUntilMs = req.LeaseUntilMs
	cur.Beat++
	return *cur, nil
}

// Release implements [Store.Release].
func (s *MemoryStore) Release(ctx context.Context, req ReleaseRequest) (Item, error) {
	if err := memCheck(ctx, req.Revision); err != nil {
		return Item{}, fmt.Errorf("lockcore: memory release: %w", err)
	}
	if !req.Result.Valid() {
		return Item{}, fmt.Errorf("lockcore: memory release: invalid result %q", req.Result)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := s.items[PartitionKey(req.Key)]
	if cur == nil || cur.Revision != req.Revision || (cur.Released && cur.Result != req.Result) {
		return Item{}, &ConditionError{Op: "release", Current: cloneItem(cur)}
	}
	cur.Released = true
	cur.ReleasedAtMs = req.NowMs
	cur.Result = req.Result
	cur.ResultRef = req.ResultRef
	cur.ResultFence = cur.Fence
	return *cur, nil
}

// Enroll implements [Store.Enroll].
func (s *MemoryStore) Enroll(ctx context.Context, key Key, revision string) (Item, error) {
	if err := memCheck(ctx, revision); err != nil {
		return Item{}, fmt.Errorf("lockcore: memory enroll: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := s.items[PartitionKey(key)]
	if cur == nil || cur.Revision != revision {
		return Item{}, &ConditionError{Op: "enroll", Current: cloneItem(cur)}
	}
	cur.Waiters++
	return *cur, nil
}

// Get implements [Store.Get].
func (s *MemoryStore) Get(ctx context.Context, key Key) (Item, bool, error) {
	if err := ctx.Err(); err != nil {
		return Item{}, false, fmt.Errorf("lockcore: memory get: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := s.items[PartitionKey(key)]
	if cur == nil {
		return Item{}, false, nil
	}
	return *cur, true, nil
}

// memCheck refuses work on a done context, as a remote store would, and
// requests without a revision.
func memCheck(ctx context.Context, revision string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if revision == "" {
		return errEmptyRevision
	}
	return nil
}

// cloneItem returns a copy of it, or nil for nil.
func cloneItem(it *Item) *Item {
	if it == nil {
		return nil
	}
	c := *it
	return &c
}
