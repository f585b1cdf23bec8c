package lockcore_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"

	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/lockcore/storeapi"
)

var errInjected = errors.New("injected store failure")

// recMetrics records every metric the lock emits.
type recMetrics struct {
	mu  sync.Mutex
	got map[string][]float64
}

func (m *recMetrics) AddMetric(name, unit string, v float64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.got == nil {
		m.got = map[string][]float64{}
	}
	m.got[name] = append(m.got[name], v)
}

func (m *recMetrics) sum(name string) float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	var s float64
	for _, v := range m.got[name] {
		s += v
	}
	return s
}

func (m *recMetrics) has(name string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.got[name]) > 0
}

// hookStore wraps a Store; each hook, when set, replaces the call. A hook
// may call the inner store itself.
type hookStore struct {
	storeapi.Store
	mu      sync.Mutex
	acquire func(context.Context, storeapi.AcquireRequest) (storeapi.Item, error)
	renew   func(context.Context, storeapi.RenewRequest) (storeapi.Item, error)
	release func(context.Context, storeapi.ReleaseRequest) (storeapi.Item, error)
	get     func(context.Context, lockcore.Key) (storeapi.Item, bool, error)
	calls   map[string]int
}

func (s *hookStore) count(op string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.calls == nil {
		s.calls = map[string]int{}
	}
	s.calls[op]++
}

func (s *hookStore) n(op string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[op]
}

func (s *hookStore) Acquire(ctx context.Context, req storeapi.AcquireRequest) (storeapi.Item, error) {
	s.count("acquire")
	if s.acquire != nil {
		return s.acquire(ctx, req)
	}
	return s.Store.Acquire(ctx, req)
}

func (s *hookStore) Renew(ctx context.Context, req storeapi.RenewRequest) (storeapi.Item, error) {
	s.count("renew")
	if s.renew != nil {
		return s.renew(ctx, req)
	}
	return s.Store.Renew(ctx, req)
}

func (s *hookStore) Release(ctx context.Context, req storeapi.ReleaseRequest) (storeapi.Item, error) {
	s.count("release")
	if s.release != nil {
		return s.release(ctx, req)
	}
	return s.Store.Release(ctx, req)
}

func (s *hookStore) Get(ctx context.Context, key lockcore.Key) (storeapi.Item, bool, error) {
	s.count("get")
	if s.get != nil {
		return s.get(ctx, key)
	}
	return s.Store.Get(ctx, key)
}

func failRenew(context.Context, storeapi.RenewRequest) (storeapi.Item, error) {
	return storeapi.Item{}, errInjected
}

func failRelease(context.Context, storeapi.ReleaseRequest) (storeapi.Item, error) {
	return storeapi.Item{}, errInjected
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func params(owner string) lockcore.Params {
	return lockcore.Params{LockID: "EUR-USD", LockGroup: "fx", HolderName: owner, AccountID: 7, AppID: 9}
}

// newLock builds a Lock or fails the test.
func newLock(t *testing.T, s storeapi.Store, owner string, opts ...lockcore.Option) *lockcore.Lock {
	t.Helper()
	l, err := lockcore.New(s, params(owner), append([]lockcore.Option{lockcore.WithLogger(quiet)}, opts...)...)
	if err != nil {
		t.Fatalf("New() error = %v", err)
	}
	return l
}

// newLockID builds a Lock on the lock id id (not the tests' usual one),
// owned by id, or fails the test.
func newLockID(t *testing.T, s storeapi.Store, id string, opts ...lockcore.Option) *lockcore.Lock {
	t.Helper()
	p := params(id)
	p.LockID = id
	l, err := lockcore.New(s, p, append([]lockcore.Option{lockcore.WithLogger(quiet)}, opts...)...)
	if err != nil {
		t.Fatalf("New() error = %v", err)
	}
	return l
}

func mustAcquire(t *testing.T, l *lockcore.Lock) {
	t.Helper()
	ok, err := l.Acquire(context.Background())
	if !ok || err != nil {
		t.Fatalf("Acquire() = %v, %v, want true, nil", ok, err)
	}
}

func mustRelease(t *testing.T, l *lockcore.Lock, r lockcore.Result, ref string) {
	t.Helper()
	if err := l.Release(context.Background(), r, ref); err != nil {
		t.Fatalf("Release() error = %v", err)
	}
}
