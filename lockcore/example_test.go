package lockcore_test

import (
	"context"
	"fmt"
	"log"
	"sync"

	"github.com/herdlock/herdlock/lockcore"
)

// Two invocations want the same exchange rate. The first acquires the lock;
// the second finds it held and waits; the first fetches and publishes; the
// second reads the published result instead of fetching again.
func Example() {
	ctx := context.Background()
	store := lockcore.NewMemoryStore() // lockcore.NewDynamoStore in production
	params := lockcore.Params{LockGroup: "fx-rates", LockID: "EUR-USD", HolderName: "invocation-1", AccountID: 1, AppID: 1}

	first, err := lockcore.New(store, params)
	if err != nil {
		log.Fatal(err)
	}
	res, err := first.TryAcquireElseWaitForRelease(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("first:", res.Outcome)

	params.HolderName = "invocation-2"
	waiting := &onMetric{name: "LockAcquisitionSuccess", ch: make(chan struct{})} // a metric docs/operations.md lists
	second, err := lockcore.New(store, params, lockcore.WithMetrics(waiting))
	if err != nil {
		log.Fatal(err)
	}
	done := make(chan lockcore.WaitResult)
	go func() {
		res, err := second.TryAcquireElseWaitForRelease(ctx)
		if err != nil {
			log.Print(err)
		}
		done <- res
	}()
	<-waiting.ch // the second's first attempt failed: it is waiting

	// ... fetch the rate, store it with first.Fence(), then publish:
	if err := first.Release(ctx, lockcore.Success, "cache:EUR-USD"); err != nil {
		log.Fatal(err)
	}
	waited := <-done
	fmt.Println("second:", waited.Outcome, "reads", waited.ResultRef, "written under the first's fence:", waited.Fence == res.Fence)
	// Output:
	// first: ACQUIRED
	// second: RELEASED reads cache:EUR-USD written under the first's fence: true
}

// onMetric closes ch the first time the metric name is recorded.
type onMetric struct {
	name string
	once sync.Once
	ch   chan struct{}
}

func (m *onMetric) AddMetric(name, _ string, _ float64) {
	if name == m.name {
		m.once.Do(func() { close(m.ch) })
	}
}
