package storetest

import (
	"context"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/truora/minidyn/server"

	"github.com/herdlock/herdlock/internal/allold"
	"github.com/herdlock/herdlock/internal/dynalite"
	"github.com/herdlock/herdlock/internal/dynalite/dynalitetest"
	"github.com/herdlock/herdlock/lockcore"
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

func TestDiffMinidyn(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(server.NewServer())
	t.Cleanup(srv.Close)
	client := dynalite.NewClient(srv.URL, func(o *dynamodb.Options) {
		// minidyn sends no X-Amz-Crc32.
		o.DisableValidateResponseChecksum = true
	})
	s, counter := dynamoStore(t, client)
	t.Run("cases", func(t *testing.T) { runCases(t, s, MinidynModel()) })
	t.Run("size-limit-edge", func(t *testing.T) { runSizeEdge(t, s, MinidynModel()) })
	rep := Diff(t, lockcore.NewMemoryStore(), s, diffOptions(MinidynModel()))
	reproduce(t, rep)
	if counter.WithItem.Load() == 0 {
		t.Errorf("failed conditions with the item = 0, want some (minidyn returns ALL_OLD)")
	}
	// The gaps show in every run of this size; if they stop showing,
	// minidyn has changed and the model is to be revisited.
	if rep.Failure == nil && rep.Steps >= 5_000 && rep.Modelled == 0 {
		t.Errorf("steps expected as the minidyn model says = 0, want some")
	}
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
	sharded := &shardedStore{byGroup: make(map[string]lockcore.Store)}
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
	stores []lockcore.Store

	mu      sync.Mutex // guards byGroup
	byGroup map[string]lockcore.Store
}

func (s *shardedStore) of(k lockcore.Key) lockcore.Store {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.byGroup[k.Group]
	if !ok {
		st = s.stores[len(s.byGroup)%len(s.stores)]
		s.byGroup[k.Group] = st
	}
	return st
}

func (s *shardedStore) Acquire(ctx context.Context, req lockcore.AcquireRequest) (lockcore.Item, error) {
	return s.of(req.Key).Acquire(ctx, req)
}

func (s *shardedStore) Renew(ctx context.Context, req lockcore.RenewRequest) (lockcore.Item, error) {
	return s.of(req.Key).Renew(ctx, req)
}

func (s *shardedStore) Release(ctx context.Context, req lockcore.ReleaseRequest) (lockcore.Item, error) {
	return s.of(req.Key).Release(ctx, req)
}

func (s *shardedStore) Get(ctx context.Context, k lockcore.Key) (lockcore.Item, bool, error) {
	return s.of(k).Get(ctx, k)
}

// Fixed sequences that once showed a difference between the stores.
var diffCases = []struct {
	name string
	ops  []op
}{
	// A fresh success must keep every branch of Acquire's condition from
	// admitting a newcomer: here the wall-clock branch, the lease having
	// lapsed long before the release.
	{"FreshSuccessWallClock", []op{
		acquireOp(lockcore.AcquireRequest{Revision: "a", NowMs: baseMs, Lease: lease, LeaseUntilMs: baseMs + 1_000, ExpiresAtMs: baseMs + 2_000}),
		releaseOp("a", baseMs+5_000, lockcore.Success),
		acquireOp(lockcore.AcquireRequest{Revision: "b", NowMs: baseMs + 10_000, Lease: lease, LeaseUntilMs: baseMs + 20_000, ExpiresAtMs: baseMs + 70_000,
			UseWallClock: true, ClockAllowance: allowance, FreshSuccessSinceMs: baseMs + 4_000}),
	}},
	// ... and the clock-free branch: the observed revision and beat are
	// unchanged, because the holder released instead of renewing.
	{"FreshSuccessObserved", []op{
		acquireOp(lockcore.AcquireRequest{Revision: "a", NowMs: baseMs, Lease: lease, LeaseUntilMs: baseMs + 10_000, ExpiresAtMs: baseMs + 60_000}),
		releaseOp("a", baseMs+5_000, lockcore.Success),
		acquireOp(lockcore.AcquireRequest{Revision: "b", NowMs: baseMs + 6_000, Lease: lease, LeaseUntilMs: baseMs + 16_000, ExpiresAtMs: baseMs + 66_000,
			Observed: &lockcore.Observation{Revision: "a", Beat: 0}, FreshSuccessSinceMs: baseMs + 4_000}),
	}},
}

func acquireOp(r lockcore.AcquireRequest) op {
	r.Owner, r.RecordAccount = "owner-"+r.Revision, account
	return op{kind: opAcquire, acquire: r}
}

func releaseOp(rev string, nowMs int64, res lockcore.Result) op {
	return op{kind: opRelease, release: lockcore.ReleaseRequest{Revision: rev, NowMs: nowMs, Result: res, ResultRef: "ref-" + rev}}
}

// runCases replays every fixed case on sut against a MemoryStore and fails
// t at the first step whose answers differ.
func runCases(t *testing.T, sut lockcore.Store, m ServerModel) {
	t.Helper()
	for _, tt := range diffCases {
		t.Run(tt.name, func(t *testing.T) {
			r := &runner{ref: lockcore.NewMemoryStore(), sut: sut, opts: DiffOptions{Model: m}.withDefaults(), prefix: "case-" + randomHex(6)}
			s := r.newStepper(0)
			for i, o := range tt.ops {
				ref, got, diffs, err := s.step(t.Context(), o)
				if err != nil {
					t.Fatalf("step %d: %v", i+1, err)
				}
				if len(diffs) > 0 {
					t.Fatalf("step %d %s:\nreference: %s\nstore under test: %s\n  %s", i+1, o, ref, got, strings.Join(diffs, "\n  "))
				}
			}
		})
	}
}

// sizeEdge returns a Release, after the Acquire of acquireOp's request "a",
// whose item holds a full answer and a reference of n bytes.
func sizeEdge(n int) []op {
	return []op{
		acquireOp(lockcore.AcquireRequest{Revision: "a", NowMs: baseMs, Lease: lease, LeaseUntilMs: baseMs + 10_000, ExpiresAtMs: baseMs + 60_000}),
		{kind: opRelease, release: lockcore.ReleaseRequest{Revision: "a", NowMs: baseMs + 5_000, Result: lockcore.Success,
			ResultRef: strings.Repeat("r", n), Answer: make([]byte, lockcore.MaxAnswerBytes)}},
	}
}

// runSizeEdge checks DynamoDB's 400 KB item limit to the byte: it finds the
// largest item the reference accepts (a Release with a full answer and the
// longest reference that fits), and requires sut to give the same answers to
// that release and to one a byte longer. The item's numbers (times like
// baseMs, with trailing zeros) are where a size rule is most easily wrong.
// A model with a size-edge shift ([DynoxideModel]) moves the edge expected
// of sut (runShiftedSizeEdge).
func runSizeEdge(t *testing.T, sut lockcore.Store, m ServerModel) {
	r := &runner{ref: lockcore.NewMemoryStore(), sut: lockcore.NewMemoryStore(), opts: DiffOptions{Model: m}.withDefaults(), prefix: "edge-" + randomHex(6)}
	fits := func(n int) bool {
		s := r.newStepper(0)
		var ref outcome
		for _, o := range sizeEdge(n) {
			var err error
			if ref, _, _, err = s.step(t.Context(), o); err != nil {
				t.Fatal(err)
			}
		}
		return ref.class == classOK
	}
	lo, hi := 0, lockcore.MaxItemBytes // fits(lo), !fits(hi)
	if !fits(lo) || fits(hi) {
		t.Fatalf("reference: a full answer with no reference fits %t, with a 400 KB one %t; want true, false", fits(lo), fits(hi))
	}
	for lo+1 < hi {
		if mid := (lo + hi) / 2; fits(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	r.sut = sut
	if m.sizeEdgeShift != 0 {
		runShiftedSizeEdge(t, r, lo, m)
		return
	}
	for _, n := range []int{lo, hi} {
		s := r.newStepper(0)
		for i, o := range sizeEdge(n) {
			ref, got, diffs, err := s.step(t.Context(), o)
			if err != nil {
				t.Fatalf("reference of %d bytes, step %d: %v", n, i+1, err)
			}
			if len(diffs) > 0 {
				t.Errorf("reference of %d bytes (the reference store's limit is %d), step %d:\nreference: %s\nstore under test: %s (%v)\n  %s",
					n, lo, i+1, ref.class, got.class, got.err, strings.Join(diffs, "\n  "))
			}
		}
	}
}
