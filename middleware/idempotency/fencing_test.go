package idempotency_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/lockcore/storeapi"
	"github.com/herdlock/herdlock/middleware/idempotency"
)

// Powertools typescript#5675 and python#8049: a holder whose in-progress
// record expired (its lease lapsed while it still ran) is taken over;
// when it wakes, it can neither complete nor delete its successor's
// record, and its late side effect, written with its fence, is refused.
// The duplicates after it replay the successor's answer.
func TestLateHolderCannotCompleteOrDelete(t *testing.T) {
	tests := []struct {
		name       string
		lateResult error // what the late holder's handler returns after its refused write; nil: success anyway
	}{
		{"the late holder returns success", nil},
		{"the late holder returns an error", errors.New("upstream failed")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				store := &stallStore{Store: lockcore.NewMemoryStore(), stalled: map[string]bool{}, stallAll: true}
				var resource fencedResource
				successorDone := make(chan struct{})
				var lateWrite error
				handle := func(ctx context.Context, o order) (receipt, error) {
					info, _ := idempotency.FromContext(ctx)
					if o.Note == "late" {
						<-ctx.Done() // the lease lapsed
						<-successorDone
						lateWrite = resource.write(info.Fence, "late")
						return receipt{ID: "late", Fence: info.Fence}, tt.lateResult
					}
					if err := resource.write(info.Fence, "successor"); err != nil {
						return receipt{}, err
					}
					return receipt{ID: "successor", Fence: info.Fence}, nil
				}
				op := func() func(context.Context, order) (receipt, error) {
					h, err := idempotency.New(idempotency.Handlers[order, receipt]{
						Handle: handle, Key: orderKey,
						Payload: func(o order) any { return o.Amount },
					}, store, quiet())
					if err != nil {
						t.Fatal(err)
					}
					return h
				}
				var wg sync.WaitGroup
				wg.Go(func() { _, _ = invoke(t, op(), 10*time.Minute, order{Key: "k", Amount: 1, Note: "late"}) })
				synctest.Wait()
				got, err := invoke(t, op(), 10*time.Minute, order{Key: "k", Amount: 1})
				if err != nil || got.ID != "successor" {
					t.Fatalf("the successor = %+v, %v; want it to take over and run", got, err)
				}
				close(successorDone)
				wg.Wait()
				if !errors.Is(lateWrite, errStaleFence) {
					t.Errorf("the late holder's write = %v, want it refused for its stale fence", lateWrite)
				}
				if v, n := resource.get(); v != "successor" || n != 1 {
					t.Errorf("resource = %q after %d writes, want the successor's one write", v, n)
				}
				it, _ := record(t, store, "herdlock", "idempotency#k")
				if !it.Released || it.Result != lockcore.Success || it.ResultFence != got.Fence {
					t.Errorf("record = released %v, %s by fence %d; want the successor's success, fence %d", it.Released, it.Result, it.ResultFence, got.Fence)
				}
				replay, err := invoke(t, op(), time.Minute, order{Key: "k", Amount: 1})
				if err != nil || replay != got {
					t.Errorf("replay = %+v, %v; want the successor's %+v", replay, err, got)
				}
			})
		})
	}
}

// lateCopyStore loses every release of the revision it stalls, and
// delivers the first later, when the test says, as a network may deliver
// a request long after its sender gave up on it.
type lateCopyStore struct {
	storeapi.Store
	mu        sync.Mutex // guards the fields below
	stallNext bool
	stalled   string
	held      *storeapi.ReleaseRequest
	deliver   chan struct{}
	lateErr   chan error
}

func (s *lateCopyStore) Acquire(ctx context.Context, req storeapi.AcquireRequest) (storeapi.Item, error) {
	it, err := s.Store.Acquire(ctx, req)
	s.mu.Lock()
	if err == nil && s.stallNext {
		s.stalled, s.stallNext = req.Revision, false
	}
	s.mu.Unlock()
	return it, err
}

func (s *lateCopyStore) Release(ctx context.Context, req storeapi.ReleaseRequest) (storeapi.Item, error) {
	s.mu.Lock()
	stalled := req.Revision == s.stalled
	first := stalled && s.held == nil
	if first {
		s.held = &req
	}
	s.mu.Unlock()
	if first {
		go func() {
			<-s.deliver
			_, err := s.Store.Release(context.Background(), req)
			s.lateErr <- err
		}()
	}
	if stalled {
		<-ctx.Done() // lost: the sender hears nothing
		return storeapi.Item{}, ctx.Err()
	}
	return s.Store.Release(ctx, req)
}

// The store's own condition fences a late copy: the first holder's
// success release, lost on the way and delivered after its lease lapsed
// and a successor completed, does not complete the successor's record.
// The first holder's caller, whose release the store never confirmed, is
// not given its answer (another run's became the key's): its error says
// a retry gets the key's answer, and the retry gets the successor's.
func TestLateReleaseCopyIsRefusedByTheStore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &lateCopyStore{Store: lockcore.NewMemoryStore(), stallNext: true,
			deliver: make(chan struct{}), lateErr: make(chan error, 1)}
		first := &counter{}
		got, err := invoke(t, wrap(t, first, store), time.Minute, order{Key: "k", Amount: 1})
		if !errors.Is(err, lockcore.ErrReleaseFailed) || first.runs.Load() != 1 {
			t.Fatalf("first = %+v, %v, %d runs; want its run's answer withheld, an error matching lockcore.ErrReleaseFailed", got, err, first.runs.Load())
		}
		time.Sleep(lockcore.DefaultLease + 2*time.Second) // its lease lapses (by twice lockcore's default clock allowance, 1s)
		second := &counter{}
		succ, err := invoke(t, wrap(t, second, store), time.Minute, order{Key: "k", Amount: 1})
		if err != nil || second.runs.Load() != 1 || succ.Fence <= 0 {
			t.Fatalf("successor = %+v, %v, %d runs; want a run of its own", succ, err, second.runs.Load())
		}
		close(store.deliver)
		var ce *storeapi.ConditionError
		if err := <-store.lateErr; !errors.As(err, &ce) {
			t.Errorf("the late copy's release = %v, want a *storeapi.ConditionError", err)
		}
		replay, err := invoke(t, wrap(t, &counter{}, store), time.Minute, order{Key: "k", Amount: 1})
		if err != nil || replay != succ {
			t.Errorf("replay = %+v, %v; want the successor's %+v", replay, err, succ)
		}
	})
}

// Powertools typescript#5675: a duplicate rejected as in progress, or
// for another payload, deleted the record it never acquired. Here a
// rejected duplicate writes nothing: the holder's record stays in
// progress for the next duplicate to wait on, then completed, and the
// handler runs once.
func TestRejectedDuplicateLeavesTheRecord(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := lockcore.NewMemoryStore()
		c := &counter{block: make(chan struct{}), started: make(chan struct{}, 1)}
		var wg sync.WaitGroup
		var first receipt
		wg.Go(func() { first, _ = invoke(t, wrap(t, c, store), time.Minute, order{Key: "k", Amount: 1}) })
		<-c.started
		if _, err := invoke(t, wrap(t, c, store), 3*time.Second, order{Key: "k", Amount: 1}); !errors.Is(err, idempotency.ErrInProgress) {
			t.Fatalf("a duplicate that cannot wait = %v, want ErrInProgress", err)
		}
		if it, _ := record(t, store, "herdlock", "idempotency#k"); it.Released {
			t.Errorf("record after the rejected duplicate = released %v, %s; want still held", it.Released, it.Result)
		}
		var waited receipt
		var waitErr error
		wg.Go(func() { waited, waitErr = invoke(t, wrap(t, c, store), time.Minute, order{Key: "k", Amount: 1}) })
		synctest.Wait()
		close(c.block)
		wg.Wait()
		if waitErr != nil || waited != first {
			t.Errorf("the next duplicate = %+v, %v; want the holder's %+v", waited, waitErr, first)
		}
		if _, err := invoke(t, wrap(t, c, store), time.Minute, order{Key: "k", Amount: 2}); !errors.Is(err, idempotency.ErrPayloadMismatch) {
			t.Fatalf("another payload = %v, want ErrPayloadMismatch", err)
		}
		if got, err := invoke(t, wrap(t, c, store), time.Minute, order{Key: "k", Amount: 1}); err != nil || got != first {
			t.Errorf("after the mismatch = %+v, %v; want the holder's %+v", got, err, first)
		}
		if got := c.runs.Load(); got != 1 {
			t.Errorf("handler runs = %d, want 1", got)
		}
	})
}

// One answer per key, also for the late holder's own caller: its record
// was taken over while its handler ran, and the record, and every
// duplicate, has the successor's answer. The late holder's caller is not
// given its handler's answer, a second completion of the key, but an
// error matching lockcore.ErrLeaseLost, and its retry replays the
// successor's answer.
func TestLateHolderCallerGetsNoSecondAnswer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &stallStore{Store: lockcore.NewMemoryStore(), stalled: map[string]bool{}, stallAll: true}
		successorDone := make(chan struct{})
		handle := func(ctx context.Context, o order) (receipt, error) {
			info, _ := idempotency.FromContext(ctx)
			if o.Note == "late" {
				<-ctx.Done() // the lease lapsed
				<-successorDone
				return receipt{ID: "late", Fence: info.Fence}, nil // its side effect not fenced
			}
			return receipt{ID: "successor", Fence: info.Fence}, nil
		}
		op := func() func(context.Context, order) (receipt, error) { // one process's operation
			h, err := idempotency.New(idempotency.Handlers[order, receipt]{
				Handle: handle, Key: orderKey, Payload: func(o order) any { return o.Amount },
			}, store, quiet())
			if err != nil {
				t.Fatal(err)
			}
			return h
		}
		lateProcess := op()
		var wg sync.WaitGroup
		var late receipt
		var lateErr error
		wg.Go(func() {
			late, lateErr = invoke(t, lateProcess, 10*time.Minute, order{Key: "k", Amount: 1, Note: "late"})
		})
		synctest.Wait()
		succ, err := invoke(t, op(), 10*time.Minute, order{Key: "k", Amount: 1})
		if err != nil || succ.ID != "successor" {
			t.Fatalf("the successor = %+v, %v; want it to take over and run", succ, err)
		}
		close(successorDone)
		wg.Wait()
		if !errors.Is(lateErr, lockcore.ErrLeaseLost) || late != (receipt{}) {
			t.Errorf("the late holder's caller = %+v, %v; want no answer and an error matching lockcore.ErrLeaseLost (the key's answer is %+v)",
				late, lateErr, succ)
		}
		if got, err := invoke(t, lateProcess, time.Minute, order{Key: "k", Amount: 1, Note: "late"}); err != nil || got != succ {
			t.Errorf("the late caller's retry = %+v, %v; want the successor's %+v", got, err, succ)
		}
	})
}

// slowReleaseStore answers every release after d, and a release whose
// context ends first is not applied: a table in a brownout, as slow for
// every call of the release.
type slowReleaseStore struct {
	storeapi.Store
	d time.Duration
}

func (s *slowReleaseStore) Release(ctx context.Context, req storeapi.ReleaseRequest) (storeapi.Item, error) {
	select {
	case <-time.After(s.d):
	case <-ctx.Done():
		return storeapi.Item{}, ctx.Err()
	}
	return s.Store.Release(ctx, req)
}

// A holder whose release meets a table that answers in a second, with
// minutes left before its deadline, completes the record: the duplicate
// after it is a replay, and the handler has run once. A release that
// gave up while the invocation had time left would leave the record in
// progress; after the lease the duplicate would run the handler again,
// and the two callers would get two answers.
func TestSlowReleaseStillCompletesTheRecord(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &slowReleaseStore{Store: lockcore.NewMemoryStore(), d: time.Second}
		c := &counter{}
		first, err := invoke(t, wrap(t, c, store), 5*time.Minute, order{Key: "k", Amount: 1})
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Second) // past the lease of a record left in progress
		dup, err := invoke(t, wrap(t, c, store), 5*time.Minute, order{Key: "k", Amount: 1})
		if err != nil || dup != first {
			t.Errorf("duplicate = %+v, %v; want the holder's answer %+v", dup, err, first)
		}
		if got := c.runs.Load(); got != 1 {
			t.Errorf("handler runs = %d, want 1", got)
		}
	})
}
