package lockcore_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/herdlock/herdlock/internal/capacity"
	"github.com/herdlock/herdlock/internal/dynalite"
	"github.com/herdlock/herdlock/lockcore"
)

// A herd on Dynoxide behind a latency proxy that makes every answer take
// 700 ms (the attempt timeout is 500 ms), in real time: each invocation has
// its own client and store, as a new execution environment has, so its
// first call reads first, gets no answer in time, and waits; its later
// calls allow the latency they measured. One invocation fetches (not
// counted as a take-over: nobody held the key before it), every other one
// is RELEASED, none FAILED, and the holder keeps its lease.
func TestSlowDynoxideHerdIsServed(t *testing.T) {
	ctx := context.Background()
	dynoxideClient(t) // starts the shared server
	endpoint := sharedDynoxide.server.Endpoint()
	if err := lockcore.CreateTable(ctx, dynalite.NewClient(endpoint), "slow"); err != nil {
		t.Fatalf("CreateTable() = %v", err)
	}
	slow := capacity.Latency(&http.Transport{MaxIdleConnsPerHost: 64}, func() time.Duration { return 700 * time.Millisecond })
	const herd = 40
	outcomes := make([]lockcore.Outcome, herd)
	errs := make([]error, herd)
	var fetches atomic.Int64
	var holderErr error
	var wg sync.WaitGroup
	for i := range herd {
		wg.Go(func() {
			time.Sleep(time.Duration(i) * time.Second / herd) // the herd arrives over a second
			client := dynalite.NewClient(endpoint, func(o *dynamodb.Options) { o.HTTPClient = &http.Client{Transport: slow} })
			store, err := lockcore.NewDynamoStore(client, "slow")
			if err != nil {
				errs[i] = err
				return
			}
			ictx, cancel := context.WithTimeout(ctx, 15*time.Second) // the invocation's deadline
			defer cancel()
			l := newLock(t, store, fmt.Sprintf("invocation-%d", i), lockcore.WithMaxWait(14*time.Second))
			res, err := l.TryAcquireElseWaitForRelease(ictx)
			outcomes[i], errs[i] = res.Outcome, err
			if res.Outcome != lockcore.Acquired {
				return
			}
			fetches.Add(1)
			if res.TookOver {
				holderErr = fmt.Errorf("the holder of a key nobody held took it over (WaitResult.TookOver)")
			}
			time.Sleep(time.Second) // the upstream call
			if !l.Valid() {
				holderErr = fmt.Errorf("not valid before release: %w", context.Cause(l.Context()))
			}
			if err := l.Release(ictx, lockcore.Success, "ref"); err != nil {
				holderErr = err
			}
		})
	}
	wg.Wait()
	count := map[lockcore.Outcome]int{}
	for i, o := range outcomes {
		count[o]++
		if errs[i] != nil {
			t.Errorf("invocation %d: %v, %v", i, o, errs[i])
		}
	}
	if holderErr != nil {
		t.Errorf("holder: %v", holderErr)
	}
	if count[lockcore.Acquired] != 1 || count[lockcore.Released] != herd-1 || fetches.Load() != 1 {
		t.Errorf("ACQUIRED %d, RELEASED %d, FAILED %d, fetches %d; want 1, %d, 0, 1",
			count[lockcore.Acquired], count[lockcore.Released], count[lockcore.Failed], fetches.Load(), herd-1)
	}
}
