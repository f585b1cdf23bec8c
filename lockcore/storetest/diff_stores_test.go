package storetest

import (
	"context"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/herdlock/herdlock/internal/allold"
	"github.com/herdlock/herdlock/internal/dynalite"
	"github.com/herdlock/herdlock/internal/dynalite/dynalitetest"
	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/lockcore/storeapi"
)

// dynamoStore returns a DynamoStore on a new table through client, and the
// counter of its failed conditions.
func dynamoStore(t *testing.T, client *dynamodb.Client) (*lockcore.DynamoStore, *ConditionCounter) {
	t.Helper()
	if err := lockcore.CreateTable(t.Context(), client, "diff"); err != nil {
		t.Fatalf("CreateTable() = %v", err)
	}
	counter := &ConditionCounter{DynamoAPI: client}
	s, err := lockcore.NewDynamoStore(counter, "diff")
	if err != nil {
		t.Fatalf("NewDynamoStore() = %v", err)
	}
	return s, counter
}

// dynaliteShards is how many dynalite servers TestDiffDynalite spreads its
// lanes over: each is one single-threaded Node.js process, and its
// expression parsing, not the Go side, bounds a run's speed.
const dynaliteShards = 2

// TestDiffDynalite runs against dynalite behind the ALL_OLD-filling proxy,
// so every failed condition on an existing item carries the item, as on
// DynamoDB, and DynamoStore's GetItem fallback is not what is compared.
func TestDiffDynalite(t *testing.T) {
	t.Parallel()
	sharded := &shardedStore{byGroup: make(map[string]storeapi.Store)}
	var proxies []*allold.Proxy
	var counters []*ConditionCounter
	for range dynaliteShards {
		srv := dynalitetest.Start(t)
		p, err := allold.New(srv.Endpoint(), nil)
		if err != nil {
			t.Fatalf("allold.New() = %v", err)
		}
		front := httptest.NewServer(p)
		t.Cleanup(front.Close)
		s, counter := dynamoStore(t, dynalite.NewClient(front.URL))
		sharded.stores = append(sharded.stores, s)
		proxies, counters = append(proxies, p), append(counters, counter)
	}
	t.Run("cases", func(t *testing.T) { runCases(t, sharded, ExactModel()) })
	t.Run("size-limit-edge", func(t *testing.T) { runSizeEdge(t, sharded, ExactModel()) })
	rep := Diff(t, lockcore.NewMemoryStore(), sharded, diffOptions(ExactModel()))
	reproduce(t, rep)
	if rep.Modelled != 0 {
		t.Errorf("steps the exact model changed = %d, want 0", rep.Modelled)
	}
	var with, without, filled int64
	for i := range proxies {
		with += counters[i].WithItem.Load()
		without += counters[i].WithoutItem.Load()
		filled += proxies[i].Filled()
	}
	t.Logf("failed conditions: %d with the item (%d filled by the proxy), %d without (absent items)", with, filled, without)
	if with == 0 || filled != with {
		t.Errorf("failed conditions with the item = %d, filled by the proxy = %d; want equal and not 0", with, filled)
	}
	if rep.Coverage["renew/absent"] > 0 && without == 0 && rep.Failure == nil {
		t.Errorf("failed conditions without an item = 0, want some (renewals of absent keys)")
	}
}

// shardedStore spreads keys over several stores by key group, round robin
// in order of first use; all keys of one group go to the same store. A
// differential run gives each lane and each replay a group of its own, so
// its lanes run on several servers at once.
type shardedStore struct {
	stores []storeapi.Store

	mu      sync.Mutex // guards byGroup
	byGroup map[string]storeapi.Store
}

func (s *shardedStore) of(k lockcore.Key) storeapi.Store {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.byGroup[k.Group]
	if !ok {
		st = s.stores[len(s.byGroup)%len(s.stores)]
		s.byGroup[k.Group] = st
	}
	return st
}

func (s *shardedStore) Acquire(ctx context.Context, req storeapi.AcquireRequest) (storeapi.Item, error) {
	return s.of(req.Key).Acquire(ctx, req)
}

func (s *shardedStore) Renew(ctx context.Context, req storeapi.RenewRequest) (storeapi.Item, error) {
	return s.of(req.Key).Renew(ctx, req)
}

func (s *shardedStore) Release(ctx context.Context, req storeapi.ReleaseRequest) (storeapi.Item, error) {
	return s.of(req.Key).Release(ctx, req)
}

func (s *shardedStore) Get(ctx context.Context, k lockcore.Key) (storeapi.Item, bool, error) {
	return s.of(k).Get(ctx, k)
}

func (s *shardedStore) Announce(ctx context.Context, a storeapi.Announcement) (bool, error) {
	return s.of(a.Key).(storeapi.Announcer).Announce(ctx, a)
}

func (s *shardedStore) GetAnnouncement(ctx context.Context, k lockcore.Key, shard int) (storeapi.Announcement, bool, error) {
	return s.of(k).(storeapi.Announcer).GetAnnouncement(ctx, k, shard)
}
