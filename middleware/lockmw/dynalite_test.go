package lockmw_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/herdlock/herdlock/internal/dynalite"
	"github.com/herdlock/herdlock/internal/dynoxide/dynoxidetest"
	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/lockcore/storeapi"
	"github.com/herdlock/herdlock/middleware/lockmw"
)

// cache is the protected resource of the integration tests: a DynamoDB
// table whose writes are conditioned on the fence, as the example does.
type cache struct {
	client *dynamodb.Client
	table  string
}

func (c cache) put(ctx context.Context, key, value string, fence int64) error {
	_, err := c.client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(c.table),
		Item: map[string]types.AttributeValue{
			storeapi.AttrLockKey: &types.AttributeValueMemberS{Value: key},
			"value":              &types.AttributeValueMemberS{Value: value},
			"fence":              &types.AttributeValueMemberN{Value: strconv.FormatInt(fence, 10)},
		},
		ConditionExpression:       aws.String("attribute_not_exists(fence) OR fence < :f"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":f": &types.AttributeValueMemberN{Value: strconv.FormatInt(fence, 10)}},
	})
	return err
}

func (c cache) get(ctx context.Context, key string) (string, error) {
	out, err := c.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(c.table),
		Key:            map[string]types.AttributeValue{storeapi.AttrLockKey: &types.AttributeValueMemberS{Value: key}},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return "", err
	}
	v, ok := out.Item["value"].(*types.AttributeValueMemberS)
	if !ok {
		return "", errors.New("no cached value")
	}
	return v.Value, nil
}

// startDynoxide starts Dynoxide with a lock table and a cache table.
func startDynoxide(t *testing.T) (*lockcore.DynamoStore, cache) {
	t.Helper()
	srv := dynoxidetest.Start(t)
	client := dynalite.NewClient(srv.Endpoint())
	for _, table := range []string{"locks", "cache"} {
		if err := lockcore.CreateTable(t.Context(), client, table); err != nil {
			t.Fatalf("CreateTable(%s) = %v", table, err)
		}
	}
	store, err := lockcore.NewDynamoStore(client, "locks")
	if err != nil {
		t.Fatalf("NewDynamoStore() = %v", err)
	}
	return store, cache{client: client, table: "cache"}
}

// watchStore counts the events of a store that tests wait for: acquire
// attempts refused because another holder has the lock. It can also drop
// releases, like a holder that was killed.
type watchStore struct {
	storeapi.Store
	refused     chan struct{}
	dropRelease bool
}

func (s *watchStore) Acquire(ctx context.Context, req storeapi.AcquireRequest) (storeapi.Item, error) {
	it, err := s.Store.Acquire(ctx, req)
	if errors.Is(err, storeapi.ErrConditionFailed) && s.refused != nil {
		s.refused <- struct{}{}
	}
	return it, err
}

// closeAfterRefused closes done once n acquire attempts were refused, so a
// holder can wait until every waiter waits; it gives up when ctx ends (the
// holder then fails on its own context).
func (s *watchStore) closeAfterRefused(ctx context.Context, n int, done chan struct{}) {
	go func() {
		for range n {
			select {
			case <-s.refused:
			case <-ctx.Done():
				return
			}
		}
		close(done)
	}()
}

func (s *watchStore) Release(ctx context.Context, req storeapi.ReleaseRequest) (storeapi.Item, error) {
	if s.dropRelease {
		return storeapi.Item{}, errDropped
	}
	return s.Store.Release(ctx, req)
}

// waitN receives n signals from ch, or fails the test when ctx ends.
func waitN(t *testing.T, ctx context.Context, ch <-chan struct{}, n int, what string) {
	t.Helper()
	for i := range n {
		select {
		case <-ch:
		case <-ctx.Done():
			t.Fatalf("saw %d of %d %s: %v", i, n, what, ctx.Err())
		}
	}
}

// TestDynoxideHerd: 20 concurrent invocations on one key give exactly one
// fetch, 19 reads of the stored value and identical results. Each
// goroutine stands for an invocation in its own sandbox: no in-process
// coalescing (TestCoalesced* cover that).
func TestDynoxideHerd(t *testing.T) {
	const n = 20
	store, c := startDynoxide(t)
	ws := &watchStore{Store: store, refused: make(chan struct{}, n)}
	allWaiting := make(chan struct{})
	var fetches, reads atomic.Int32

	fetch := func(ctx context.Context, e event) (string, error) {
		fetches.Add(1)
		// Publish only once every other invocation has tried and is
		// waiting: a late arrival would find the lock released and fetch.
		select {
		case <-allWaiting:
		case <-ctx.Done():
			return "", context.Cause(ctx)
		}
		info, _ := lockmw.FromContext(ctx)
		value := fmt.Sprintf("rate@fence-%d", info.Fence)
		return value, c.put(ctx, e.Key, value, info.Fence)
	}
	read := func(ctx context.Context, e event) (string, error) {
		reads.Add(1)
		return c.get(ctx, e.Key)
	}
	h := mustNewHandlers(t, lockmw.Handlers[event, string]{Fetch: fetch, OnReleased: read}, ws, options(lockmw.WithoutCoalescing())...)

	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	ws.closeAfterRefused(ctx, n-1, allWaiting)
	results := make([]string, n)
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			ictx, icancel := invocationContext(ctx, 30*time.Second, fmt.Sprint("req-", i))
			defer icancel()
			<-start
			results[i], errs[i] = h(ictx, event{Key: "EUR-USD"})
		})
	}
	close(start)
	wg.Wait()

	for i, err := range errs {
		if err != nil {
			t.Errorf("invocation %d: %v", i, err)
		}
	}
	if fetches.Load() != 1 || reads.Load() != n-1 {
		t.Errorf("fetches, reads = %d, %d; want 1, %d", fetches.Load(), reads.Load(), n-1)
	}
	for i, r := range results {
		if r != results[0] || r == "" {
			t.Errorf("result %d = %q, want all equal to %q", i, r, results[0])
		}
	}
}

// TestDynoxideKilledHolder: a holder killed mid-handler (its context
// cancelled, its release lost) leads to exactly one take-over among the
// waiters; the others read the take-over's result. The waiters stand for
// invocations in sandboxes of their own: no in-process coalescing.
func TestDynoxideKilledHolder(t *testing.T) {
	const waiters = 5
	store, c := startDynoxide(t)
	// Long enough that the holder's renewals, queued on a loaded server
	// behind the waiters' first attempts, land within its validity.
	lease := lockmw.WithLockOptions(lockcore.WithLease(3 * time.Second))
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()

	// The holder that will be killed: its releases never reach DynamoDB.
	started := make(chan struct{})
	killedStore := &watchStore{Store: store, dropRelease: true}
	victim := mustNew(t, func(ctx context.Context, e event) (string, error) {
		close(started)
		<-ctx.Done() // mid-fetch when killed
		return "", context.Cause(ctx)
	}, killedStore, options(lease)...)
	vctx, kill := invocationContext(ctx, 30*time.Second, "victim")
	defer kill()
	victimDone := make(chan error, 1)
	go func() {
		_, err := victim(vctx, event{Key: "EUR-USD"})
		victimDone <- err
	}()
	select {
	case <-started:
	case <-ctx.Done():
		t.Fatal("the victim never started")
	}

	// Each waiter's first attempt is refused; the losers of the take-over
	// race are refused once more.
	ws := &watchStore{Store: store, refused: make(chan struct{}, 2*waiters)}
	var fetches, reads, tookOver atomic.Int32
	fetch := func(ctx context.Context, e event) (string, error) {
		fetches.Add(1)
		info, _ := lockmw.FromContext(ctx)
		if info.TookOver {
			tookOver.Add(1)
		}
		value := fmt.Sprintf("rate@fence-%d", info.Fence)
		return value, c.put(ctx, e.Key, value, info.Fence)
	}
	read := func(ctx context.Context, e event) (string, error) {
		reads.Add(1)
		return c.get(ctx, e.Key)
	}
	h := mustNewHandlers(t, lockmw.Handlers[event, string]{Fetch: fetch, OnReleased: read}, ws, options(lease, lockmw.WithoutCoalescing())...)
	results := make([]string, waiters)
	errs := make([]error, waiters)
	var wg sync.WaitGroup
	for i := range waiters {
		wg.Go(func() {
			ictx, icancel := invocationContext(ctx, 30*time.Second, fmt.Sprint("req-", i))
			defer icancel()
			results[i], errs[i] = h(ictx, event{Key: "EUR-USD"})
		})
	}
	waitN(t, ctx, ws.refused, waiters, "waiters refused at their first attempt")
	kill()
	if err := <-victimDone; !errors.Is(err, context.Canceled) {
		t.Errorf("victim returned %v, want its cancellation", err)
	}
	wg.Wait()

	for i, err := range errs {
		if err != nil {
			t.Errorf("waiter %d: %v", i, err)
		}
	}
	if fetches.Load() != 1 || tookOver.Load() != 1 || reads.Load() != waiters-1 {
		t.Errorf("fetches, take-overs, reads = %d, %d, %d; want 1, 1, %d", fetches.Load(), tookOver.Load(), reads.Load(), waiters-1)
	}
	for i, r := range results {
		if r != results[0] || r == "" {
			t.Errorf("result %d = %q, want all equal to %q", i, r, results[0])
		}
	}
}
