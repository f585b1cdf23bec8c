package idempotency_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/lockcore/storeapi"
	"github.com/herdlock/herdlock/middleware/idempotency"
	"github.com/herdlock/herdlock/middleware/lockmw"
)

// Powertools raises on a concurrent duplicate, the draft and Stripe answer
// 409: here a duplicate waits for the first one's answer, in this process
// and in others, and every caller gets that answer; the handler runs once.
func TestConcurrentDuplicatesWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := lockcore.NewMemoryStore()
		c := &counter{block: make(chan struct{}), started: make(chan struct{}, 1)}
		processes := []func(context.Context, order) (receipt, error){wrap(t, c, store), wrap(t, c, store), wrap(t, c, store)}
		var wg sync.WaitGroup
		answers := make([]receipt, 12)
		errs := make([]error, len(answers))
		wg.Go(func() { answers[0], errs[0] = invoke(t, processes[0], time.Minute, order{Key: "k", Amount: 7}) })
		<-c.started
		for i := 1; i < len(answers); i++ {
			wg.Go(func() { answers[i], errs[i] = invoke(t, processes[i%3], time.Minute, order{Key: "k", Amount: 7}) })
		}
		time.Sleep(5 * time.Second) // the holder works; the others wait
		close(c.block)
		wg.Wait()
		for i := range answers {
			if errs[i] != nil || answers[i] != answers[0] {
				t.Errorf("invocation %d = %+v, %v; want the holder's %+v", i, answers[i], errs[i], answers[0])
			}
		}
		if got := c.runs.Load(); got != 1 {
			t.Errorf("handler runs = %d, want 1", got)
		}
	})
}

// A duplicate waits as long as its deadline allows, longer than
// lockcore's default maximum wait, for a holder that works long.
func TestDuplicateWaitsUntilItsDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := lockcore.NewMemoryStore()
		c := &counter{block: make(chan struct{}), started: make(chan struct{}, 1)}
		var wg sync.WaitGroup
		wg.Go(func() { _, _ = invoke(t, wrap(t, c, store), 5*time.Minute, order{Key: "k", Amount: 1}) })
		<-c.started
		go func() { time.Sleep(2 * lockcore.DefaultMaxWait); close(c.block) }()
		_, err := invoke(t, wrap(t, c, store), 5*time.Minute, order{Key: "k", Amount: 1})
		wg.Wait()
		if err != nil || c.runs.Load() != 1 {
			t.Errorf("duplicate after %v = %v, %d runs; want the answer, 1 run", 2*lockcore.DefaultMaxWait, err, c.runs.Load())
		}
	})
}

// A duplicate that cannot wait for the answer within its deadline (less
// lockmw's safety margin) fails with ErrInProgress, at that time, and the
// handler has not run for it; the draft's 409.
func TestDuplicateThatCannotWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := lockcore.NewMemoryStore()
		c := &counter{block: make(chan struct{}), started: make(chan struct{}, 1)}
		h := wrap(t, c, store)
		var wg sync.WaitGroup
		wg.Go(func() { _, _ = invoke(t, h, time.Minute, order{Key: "k", Amount: 1}) })
		<-c.started
		start := time.Now()
		_, err := invoke(t, wrap(t, c, store), 5*time.Second, order{Key: "k", Amount: 1})
		waited := time.Since(start)
		close(c.block)
		wg.Wait()
		if !errors.Is(err, idempotency.ErrInProgress) || !errors.Is(err, lockcore.ErrWaitTimeout) {
			t.Errorf("invoke() = %v, want ErrInProgress and lockcore.ErrWaitTimeout", err)
		}
		if want := 5*time.Second - lockmw.DefaultSafetyMargin; waited > want+time.Second {
			t.Errorf("the duplicate returned after %v, want by its deadline less the margin, %v", waited, want)
		}
		if got := c.runs.Load(); got != 1 {
			t.Errorf("handler runs = %d, want 1", got)
		}
	})
}

// Powertools python#4759: a remaining time of 0 was read as "unknown",
// so the in-progress record had no expiry and blocked its key. Here a
// remaining time of 0 or less is no time left: the handler does not run
// and no record is written, so the retry runs at once.
func TestNoTimeLeftWritesNoRecord(t *testing.T) {
	tests := []struct {
		name string
		left time.Duration
	}{
		{"none left", 0},
		{"past the deadline", -time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				store := lockcore.NewMemoryStore()
				c := &counter{}
				h := wrap(t, c, store, idempotency.WithLockmwOptions(lockmw.WithSafetyMargin(0)))
				ctx, cancel := context.WithDeadline(t.Context(), time.Now().Add(tt.left))
				defer cancel()
				if _, err := h(ctx, order{Key: "k", Amount: 1}); !errors.Is(err, lockcore.ErrNoTimeLeft) {
					t.Errorf("invoke(%v left) = %v, want lockcore.ErrNoTimeLeft", tt.left, err)
				}
				if _, found := record(t, store, "herdlock", "idempotency#k"); found {
					t.Error("a record was written for an invocation with no time left")
				}
				if _, err := invoke(t, h, time.Minute, order{Key: "k", Amount: 1}); err != nil {
					t.Errorf("the retry = %v, want it to run", err)
				}
				if got := c.runs.Load(); got != 1 {
					t.Errorf("handler runs = %d, want 1 (the retry's)", got)
				}
			})
		})
	}
}

// Powertools: an in-progress record expires with the Lambda's remaining
// time. Here it is bounded by the holder's lease and maximum hold: a
// holder that stopped renewing (frozen, crashed) holds the record for
// about a lease, one that renews until its invocation's deadline; then a
// waiting duplicate takes over, with a higher fence, and its answer is
// the one replayed.
func TestInProgressBoundedByLeaseAndMaxHold(t *testing.T) {
	tests := []struct {
		name        string
		stall       bool          // the holder's renewals are lost
		holderLeft  time.Duration // the holder's deadline
		wantTakeAft time.Duration // the take-over comes about then: up to a second before, a few after
		// what the first holder's caller gets when its handler returns
		// after the take-over: not its answer, a second one for the key
		wantHolderErr error
	}{
		{"a holder that stopped renewing: its lease", true, 10 * time.Minute, lockcore.DefaultLease, lockcore.ErrLeaseLost},
		{"a holder that renews: its deadline less the margin", false, 20 * time.Second, 20*time.Second - lockmw.DefaultSafetyMargin,
			lockcore.ErrMaxHoldReached},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				store := &stallStore{Store: lockcore.NewMemoryStore(), stalled: map[string]bool{}, stallAll: tt.stall}
				holder := &counter{block: make(chan struct{}), started: make(chan struct{}, 1)}
				var wg sync.WaitGroup
				var first receipt
				var firstErr error
				wg.Go(func() { first, firstErr = invoke(t, wrap(t, holder, store), tt.holderLeft, order{Key: "k", Amount: 1}) })
				<-holder.started
				start := time.Now()
				taker := &counter{}
				got, err := invoke(t, wrap(t, taker, store), 10*time.Minute, order{Key: "k", Amount: 1})
				took := time.Since(start)
				close(holder.block)
				wg.Wait()
				if err != nil || taker.runs.Load() != 1 {
					t.Fatalf("duplicate = %+v, %v, %d runs; want it to take over and run", got, err, taker.runs.Load())
				}
				if took < tt.wantTakeAft-time.Second || took > tt.wantTakeAft+3*time.Second {
					t.Errorf("took over after %v, want about %v", took, tt.wantTakeAft)
				}
				if f := holder.fence.Load(); f == 0 || got.Fence <= f {
					t.Errorf("taker's fence = %d, want above the first holder's %d", got.Fence, f)
				}
				if !errors.Is(firstErr, tt.wantHolderErr) || first != (receipt{}) {
					t.Errorf("the first holder's caller = %+v, %v; want no answer (the key's is the taker's) and %v", first, firstErr, tt.wantHolderErr)
				}
				replay, err := invoke(t, wrap(t, &counter{}, store), time.Minute, order{Key: "k", Amount: 1})
				if err != nil || replay != got {
					t.Errorf("replay = %+v, %v; want the taker's %+v", replay, err, got)
				}
			})
		})
	}
}

// A duplicate in the same process (Lambda Managed Instances run several
// invocations at once) waits for the holder's lock attempt in the
// process, as lockmw coalesces them; when the holder's lease lapses while
// its handler runs on, ignoring its cancelled context, the duplicate
// takes over after the lease, as a duplicate in another process does,
// instead of waiting for that handler until its own deadline and failing
// with ErrInProgress.
func TestInProcessDuplicateTakesOverAfterTheLease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &stallStore{Store: lockcore.NewMemoryStore(), stalled: map[string]bool{}, stallAll: true}
		release := make(chan struct{})
		handle := func(ctx context.Context, o order) (receipt, error) {
			info, _ := idempotency.FromContext(ctx)
			if o.Note == "stuck" {
				<-release // ignores its cancelled context
			}
			return receipt{ID: o.Note, Fence: info.Fence}, nil
		}
		h, err := idempotency.New(idempotency.Handlers[order, receipt]{Handle: handle, Key: orderKey,
			Payload: func(o order) any { return o.Amount }}, store, quiet())
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		wg.Go(func() { _, _ = invoke(t, h, 15*time.Minute, order{Key: "k", Amount: 1, Note: "stuck"}) })
		synctest.Wait()
		start := time.Now()
		got, err := invoke(t, h, time.Minute, order{Key: "k", Amount: 1, Note: "taker"})
		took := time.Since(start)
		close(release)
		wg.Wait()
		if err != nil || got.ID != "taker" || took > lockcore.DefaultLease+3*time.Second {
			t.Errorf("in-process duplicate = %+v, %v after %v; want it to take over after the lease, as another process does", got, err, took)
		}
	})
}

// throttledStore throttles every call while shut is set, as a table over
// its capacity does.
type throttledStore struct {
	*lockcore.MemoryStore
	shut atomic.Bool
}

func (s *throttledStore) err() error {
	if s.shut.Load() {
		return fmt.Errorf("test: over the table's capacity: %w", lockcore.ErrThrottled)
	}
	return nil
}

func (s *throttledStore) Acquire(ctx context.Context, req storeapi.AcquireRequest) (storeapi.Item, error) {
	if err := s.err(); err != nil {
		return storeapi.Item{}, err
	}
	return s.MemoryStore.Acquire(ctx, req)
}

func (s *throttledStore) Get(ctx context.Context, k lockcore.Key) (storeapi.Item, bool, error) {
	if err := s.err(); err != nil {
		return storeapi.Item{}, false, err
	}
	return s.MemoryStore.Get(ctx, k)
}

// A request whose every call a table throttled, with no record of its
// key, is not told that an invocation with the key is in progress: its
// wait never had the record, so its error is the lock's failure
// (lockmw.ErrLockFailed, lockcore.ErrThrottled), not ErrInProgress. A
// duplicate that did read the record, held by the first invocation, and
// then was throttled is ErrInProgress.
func TestThrottledWaitThatNeverReadTheRecordIsNotInProgress(t *testing.T) {
	t.Run("no record, every call throttled", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			store := &throttledStore{MemoryStore: lockcore.NewMemoryStore()}
			store.shut.Store(true)
			c := &counter{}
			_, err := invoke(t, wrap(t, c, store), 5*time.Second, order{Key: "k", Amount: 1})
			if errors.Is(err, idempotency.ErrInProgress) || !errors.Is(err, lockmw.ErrLockFailed) || !errors.Is(err, lockcore.ErrThrottled) {
				t.Errorf("invoke() = %v; want lockmw.ErrLockFailed and lockcore.ErrThrottled, not ErrInProgress", err)
			}
			if got := c.runs.Load(); got != 0 {
				t.Errorf("handler runs = %d, want 0", got)
			}
		})
	})
	t.Run("the record read, then throttled", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			store := &throttledStore{MemoryStore: lockcore.NewMemoryStore()}
			c := &counter{block: make(chan struct{}), started: make(chan struct{}, 1)}
			var wg sync.WaitGroup
			wg.Go(func() { _, _ = invoke(t, wrap(t, c, store), time.Minute, order{Key: "k", Amount: 1}) })
			<-c.started
			done := make(chan error, 1)
			go func() {
				_, err := invoke(t, wrap(t, c, store), 5*time.Second, order{Key: "k", Amount: 1})
				done <- err
			}()
			time.Sleep(time.Second) // the duplicate has read the record in progress
			store.shut.Store(true)
			err := <-done
			store.shut.Store(false)
			close(c.block)
			wg.Wait()
			if !errors.Is(err, idempotency.ErrInProgress) {
				t.Errorf("invoke() = %v; want ErrInProgress", err)
			}
		})
	})
}
