package lockcore_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/herdlock/herdlock/internal/capacity"
	"github.com/herdlock/herdlock/internal/dynalite"
	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/lockcore/storeapi"
)

// A herd on Dynoxide behind the capacity model: while the item's write
// capacity is spent, the waiters' first acquires are throttled, each once,
// and they wait; when the holder publishes, every one of them is Released.
func TestThrottledHerdOnDynoxide(t *testing.T) {
	ctx := context.Background()
	dynoxideClient(t) // starts the shared server
	// One unit in the write bucket, refilled once in 100 s: the holder's
	// acquire takes it. Reads are plentiful.
	p, err := capacity.New(capacity.Config{Upstream: sharedDynoxide.server.Endpoint(), WriteUnits: 0.01, Burst: 100 * time.Second, ReadUnits: 1000})
	if err != nil {
		t.Fatalf("capacity.New() = %v", err)
	}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	client := dynalite.NewClient(srv.URL)
	if err := lockcore.CreateTable(ctx, client, "throttled"); err != nil {
		t.Fatalf("CreateTable() = %v", err)
	}
	store, err := lockcore.NewDynamoStore(client, "throttled")
	if err != nil {
		t.Fatal(err)
	}
	holder := newLock(t, store, "holder")
	mustAcquire(t, holder)
	item := capacity.ItemKey("throttled", storeapi.AttrLockKey, storeapi.PartitionKey(holder.Key()))

	// Another write now is throttled, and says so.
	_, err = store.Acquire(ctx, fakeAcquireRequest("other"))
	if !errors.Is(err, lockcore.ErrThrottled) {
		t.Fatalf("Acquire() on a spent item = %v, want an error matching ErrThrottled", err)
	}

	const waiters = 5
	var wg sync.WaitGroup
	results := make([]lockcore.Outcome, waiters)
	errs := make([]error, waiters)
	for i := range waiters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Without the memory of hot keys each waiter writes first
			// (with it, those that start after a throttle read first), so
			// that every first acquire meets the spent bucket once.
			l := newLock(t, store, "waiter", lockcore.WithMaxWait(time.Minute), lockcore.WithHerd(lockcore.Herd{NoHotKeys: true}))
			res, err := l.TryAcquireElseWaitForRelease(ctx)
			results[i], errs[i] = res.Outcome, err
		}()
	}
	// The waiters' first acquires are throttled; then release with
	// capacity restored.
	deadline := time.Now().Add(30 * time.Second)
	for p.Item(item).Ops["UpdateItem"].Throttled < 1+waiters {
		if time.Now().After(deadline) {
			t.Fatalf("after 30 s the model throttled %d writes, want %d", p.Item(item).Ops["UpdateItem"].Throttled, 1+waiters)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Let the waiters poll a while: none of them writes again.
	time.Sleep(500 * time.Millisecond)
	before := p.Item(item).Ops["UpdateItem"]
	if err := p.SetRates(1000, 1000); err != nil {
		t.Fatal(err)
	}
	mustRelease(t, holder, lockcore.Success, "ref")
	wg.Wait()
	for i := range waiters {
		if results[i] != lockcore.Released || errs[i] != nil {
			t.Errorf("waiter %d = %v, %v, want RELEASED", i, results[i], errs[i])
		}
	}
	if before.Requests != 2+waiters || before.Throttled != 1+waiters {
		t.Errorf("before the release: UpdateItem requests, throttled = %d, %d, want %d, %d (no throttled acquire written twice)",
			before.Requests, before.Throttled, 2+waiters, 1+waiters)
	}
	// The release may meet an empty bucket once or twice before the
	// raised rate refills it; apart from that, only the holder wrote.
	after := p.Item(item).Ops["UpdateItem"]
	if admitted := after.Requests - after.Throttled; admitted != 2 {
		t.Errorf("admitted writes = %d, want 2 (the holder's acquire and release)", admitted)
	}
}
