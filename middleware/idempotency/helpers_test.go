package idempotency_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/lockcore/storeapi"
	"github.com/herdlock/herdlock/middleware/idempotency"
	"github.com/herdlock/herdlock/middleware/lockmw"
)

// order is the tests' event: an idempotency key and a payload.
type order struct {
	Key    string            `json:"key"`
	Amount int               `json:"amount"`
	Note   string            `json:"note,omitempty"`
	Tags   map[string]string `json:"tags,omitempty"`
}

// receipt is the tests' answer.
type receipt struct {
	ID     string `json:"id"`
	Amount int    `json:"amount"`
	Fence  int64  `json:"fence"`
}

func orderKey(_ context.Context, o order) (string, error) { return o.Key, nil }

// quiet are the lockmw options of every test: a record account, no logs,
// no metrics.
func quiet() idempotency.Option {
	return idempotency.WithLockmwOptions(lockmw.WithHolder(lockmw.Holder{AccountID: 123456789012, AppID: 1}),
		lockmw.WithTelemetry(lockmw.Telemetry{Logger: slog.New(slog.DiscardHandler), EMFWriter: io.Discard}))
}

// counter is a handler that counts its runs and answers with its run
// number and fence, after an optional block.
type counter struct {
	runs    atomic.Int32
	block   chan struct{} // when not nil, every run waits for it to close
	started chan struct{} // when not nil, every run sends on it first
	err     error         // returned by every run when not nil
	fence   atomic.Int64  // the fence of the latest run
}

func (c *counter) handle(ctx context.Context, o order) (receipt, error) {
	n := c.runs.Add(1)
	if c.started != nil {
		c.started <- struct{}{}
	}
	if c.block != nil {
		<-c.block
	}
	if c.err != nil {
		return receipt{}, c.err
	}
	info, _ := idempotency.FromContext(ctx)
	c.fence.Store(info.Fence)
	return receipt{ID: "r" + string(rune('0'+n)), Amount: o.Amount, Fence: info.Fence}, nil
}

// wrap is the operation of c, with the tests' defaults and opts.
func wrap(t *testing.T, c *counter, store storeapi.Store, opts ...idempotency.Option) func(context.Context, order) (receipt, error) {
	t.Helper()
	h, err := idempotency.New(idempotency.Handlers[order, receipt]{Handle: c.handle, Key: orderKey},
		store, append([]idempotency.Option{quiet()}, opts...)...)
	if err != nil {
		t.Fatalf("New() = %v", err)
	}
	return h
}

// invoke calls h with a deadline of timeout from now.
func invoke(t *testing.T, h func(context.Context, order) (receipt, error), timeout time.Duration, o order) (receipt, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	return h(ctx, o)
}

// countingStore counts the store calls.
type countingStore struct {
	storeapi.Store
	calls atomic.Int32
}

func (s *countingStore) Acquire(ctx context.Context, req storeapi.AcquireRequest) (storeapi.Item, error) {
	s.calls.Add(1)
	return s.Store.Acquire(ctx, req)
}

func (s *countingStore) Get(ctx context.Context, key lockcore.Key) (storeapi.Item, bool, error) {
	s.calls.Add(1)
	return s.Store.Get(ctx, key)
}

func (s *countingStore) Release(ctx context.Context, req storeapi.ReleaseRequest) (storeapi.Item, error) {
	s.calls.Add(1)
	return s.Store.Release(ctx, req)
}

// stallStore loses the renewals and releases of the revisions it was told
// to stall, like a holder whose process froze: its lease lapses while it
// still runs.
type stallStore struct {
	storeapi.Store
	mu       sync.Mutex // guards stalled
	stalled  map[string]bool
	stallAll bool // stall the next acquisition's revision
}

var errStalled = errors.New("test: request lost")

func (s *stallStore) Acquire(ctx context.Context, req storeapi.AcquireRequest) (storeapi.Item, error) {
	it, err := s.Store.Acquire(ctx, req)
	s.mu.Lock()
	if err == nil && s.stallAll {
		s.stalled[req.Revision], s.stallAll = true, false
	}
	s.mu.Unlock()
	return it, err
}

func (s *stallStore) isStalled(rev string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stalled[rev]
}

func (s *stallStore) Renew(ctx context.Context, req storeapi.RenewRequest) (storeapi.Item, error) {
	if s.isStalled(req.Revision) {
		return storeapi.Item{}, errStalled
	}
	return s.Store.Renew(ctx, req)
}

// fencedResource is the side effect of the take-over tests: a write is
// accepted only with a fence higher than the last accepted one, as a
// conditional write on the fence does.
type fencedResource struct {
	mu     sync.Mutex // guards the fields below
	fence  int64
	value  string
	writes int
}

var errStaleFence = errors.New("test: stale fence")

func (r *fencedResource) write(fence int64, value string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if fence <= r.fence {
		return errStaleFence
	}
	r.fence, r.value = fence, value
	r.writes++
	return nil
}

func (r *fencedResource) get() (string, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.value, r.writes
}

// record reads the record of id in the default partition from store.
func record(t *testing.T, store storeapi.Store, group, id string) (storeapi.Item, bool) {
	t.Helper()
	it, found, err := store.Get(context.Background(), lockcore.Key{Group: group, ID: id})
	if err != nil {
		t.Fatalf("Get(%s/%s) = %v", group, id, err)
	}
	return it, found
}
