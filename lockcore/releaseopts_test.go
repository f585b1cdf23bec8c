package lockcore_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/lockcore/storeapi"
)

func TestAnswerReachesWaitersAndFreshNewcomers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := lockcore.NewMemoryStore()
		holder := newLock(t, mem, "h")
		mustAcquire(t, holder)
		done := make(chan lockcore.WaitResult)
		go func() {
			res, err := newLock(t, mem, "w").TryAcquireElseWaitForRelease(context.Background())
			if err != nil {
				t.Errorf("waiter: %v", err)
			}
			done <- res
		}()
		time.Sleep(time.Second)
		if err := holder.Release(context.Background(), lockcore.Success, "inline", lockcore.WithAnswer([]byte(`{"rate":1.08}`))); err != nil {
			t.Fatalf("Release(WithAnswer) = %v", err)
		}
		if res := <-done; res.Outcome != lockcore.Released || string(res.Answer) != `{"rate":1.08}` || res.ResultRef != "inline" {
			t.Errorf("waiter = %+v, want RELEASED with the answer", res)
		}

		// A newcomer within the fresh-success window reads the answer from
		// its one refused conditional write.
		store := &hookStore{Store: mem}
		late := newLock(t, store, "late", lockcore.WithFreshSuccess(time.Minute))
		res, err := late.TryAcquireElseWaitForRelease(context.Background())
		if err != nil || res.Outcome != lockcore.Released || string(res.Answer) != `{"rate":1.08}` {
			t.Errorf("fresh newcomer = %+v, %v, want RELEASED with the answer", res, err)
		}
		if store.n("acquire") != 1 || store.n("get") != 0 {
			t.Errorf("fresh newcomer made %d writes and %d reads, want 1 and 0", store.n("acquire"), store.n("get"))
		}
	})
}

func TestReleaseRefusesABadAnswerBeforeWriting(t *testing.T) {
	tests := []struct {
		name    string
		result  lockcore.Result
		answer  []byte
		wantErr error // nil: any error
	}{
		{"too large", lockcore.Success, make([]byte, lockcore.MaxAnswerBytes+1), lockcore.ErrAnswerTooLarge},
		{"with failure", lockcore.Failure, []byte("x"), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				store := &hookStore{Store: lockcore.NewMemoryStore()}
				l := newLock(t, store, "a")
				mustAcquire(t, l)
				err := l.Release(context.Background(), tt.result, "", lockcore.WithAnswer(tt.answer))
				if err == nil || (tt.wantErr != nil && !errors.Is(err, tt.wantErr)) {
					t.Fatalf("Release() = %v, want an error (%v)", err, tt.wantErr)
				}
				if store.n("release") != 0 || !l.HasLock() || l.Context().Err() != nil {
					t.Errorf("after the refusal: %d release writes, HasLock %v, ctx %v; want none, still held", store.n("release"), l.HasLock(), l.Context().Err())
				}
				mustRelease(t, l, lockcore.Success, "ref") // the reference path instead
			})
		})
	}
}

func TestFailureReleasePublishesASafeEpisode(t *testing.T) {
	tests := []struct {
		name       string
		opts       []lockcore.ReleaseOption
		wantReason string
		notBefore  time.Duration // from the release; 0: none
	}{
		{"code and retry-after", []lockcore.ReleaseOption{lockcore.WithFailureReason("upstream_429")}, "upstream_429", 3 * time.Second},
		{"no options", nil, "unspecified", 0},
		{"raw error text", []lockcore.ReleaseOption{lockcore.WithFailureReason("GET https://api.example/rates?token=s3cr3t: 429")}, "unspecified", 0},
		{"upper case", []lockcore.ReleaseOption{lockcore.WithFailureReason("Upstream")}, "unspecified", 0},
		{"65 bytes", []lockcore.ReleaseOption{lockcore.WithFailureReason(strings.Repeat("a", 65))}, "unspecified", 0},
		{"64 bytes", []lockcore.ReleaseOption{lockcore.WithFailureReason(strings.Repeat("a", 64))}, strings.Repeat("a", 64), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				mem := lockcore.NewMemoryStore()
				l := newLock(t, mem, "a", lockcore.WithLease(4*time.Second))
				mustAcquire(t, l)
				opts := tt.opts
				if tt.notBefore > 0 {
					opts = append(opts, lockcore.WithNotBefore(time.Now().Add(tt.notBefore)))
				}
				if err := l.Release(context.Background(), lockcore.Failure, "", opts...); err != nil {
					t.Fatalf("Release(failure) = %v", err)
				}
				it, _, _ := mem.Get(context.Background(), l.Key())
				nowMs := time.Now().UnixMilli()
				var nb int64
				if tt.notBefore > 0 {
					nb = nowMs + tt.notBefore.Milliseconds()
				}
				if it.FailReason != tt.wantReason || it.Failures != 1 || it.NotBeforeMs != nb ||
					it.FailRecentUntilMs != max(nb, nowMs)+4000 {
					t.Errorf("item episode = reason %q, failures %d, not before %d, recent until %d; want %q, 1, %d, %d",
						it.FailReason, it.Failures, it.NotBeforeMs, it.FailRecentUntilMs, tt.wantReason, nb, max(nb, nowMs)+4000)
				}
			})
		})
	}
}

// TestRetriedReleaseAfterANewcomerAcquired (#11 defect 6): the holder's
// release is applied, its response lost, and a newcomer acquires before the
// retry. The retry is refused, but the item shows our release as the
// previous one: Release returns nil.
func TestRetriedReleaseAfterANewcomerAcquired(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := lockcore.NewMemoryStore()
		store := &hookStore{Store: mem}
		first := true
		newcomer := newLock(t, mem, "newcomer")
		store.release = func(ctx context.Context, req storeapi.ReleaseRequest) (storeapi.Item, error) {
			it, err := mem.Release(ctx, req)
			if first && err == nil {
				first = false
				if ok, err := newcomer.Acquire(context.Background()); !ok || err != nil {
					t.Errorf("newcomer Acquire() = %v, %v", ok, err)
				}
				return storeapi.Item{}, errInjected
			}
			return it, err
		}
		defer mustRelease(t, newcomer, lockcore.Success, "")
		l := newLock(t, store, "a")
		mustAcquire(t, l)
		if err := l.Release(context.Background(), lockcore.Success, "ref"); err != nil {
			t.Fatalf("Release() = %v, want nil: the success was published", err)
		}
		if store.n("release") != 2 {
			t.Errorf("release attempts = %d, want 2", store.n("release"))
		}
	})
}

// TestFreshSuccessHoldsOnEveryStore (#11 defect 1): with the wall clock on,
// a newcomer that arrives after the released holder's lease has lapsed by
// more than the clock allowance, but within the fresh-success window, reads
// the published success on every store instead of acquiring.
func TestFreshSuccessHoldsOnEveryStore(t *testing.T) {
	for _, st := range everyStore() {
		t.Run(st.name, func(t *testing.T) {
			s := st.new(t)
			holder := newLock(t, s, "h")
			mustAcquire(t, holder)
			if err := holder.Release(context.Background(), lockcore.Success, "data@1", lockcore.WithAnswer([]byte("1.08"))); err != nil {
				t.Fatalf("Release() = %v", err)
			}
			// 8s later by the newcomer's clock: the default lease (6s) plus
			// the clock allowance (1s) has passed.
			late := newLock(t, s, "late", lockcore.WithFreshSuccess(5*time.Minute), lockcore.WithClocks(lockcore.Clocks{Wall: skewed(8 * time.Second)}))
			res, err := late.TryAcquireElseWaitForRelease(context.Background())
			if err != nil || res.Outcome != lockcore.Released || res.ResultRef != "data@1" || !bytes.Equal(res.Answer, []byte("1.08")) {
				t.Errorf("TryAcquireElseWaitForRelease() = %+v, %v, want RELEASED data@1 with the answer", res, err)
			}
			if late.HasLock() {
				mustRelease(t, late, lockcore.Failure, "")
			}
		})
	}
}

// namedStore makes a fresh store of one kind for a test.
type namedStore struct {
	name string
	new  func(t *testing.T) storeapi.Store
}

// everyStore is the memory store and a DynamoStore on dynalite and on
// Dynoxide, each on a table of its own.
func everyStore() []namedStore {
	return []namedStore{
		{"memory", func(*testing.T) storeapi.Store { return lockcore.NewMemoryStore() }},
		{"dynalite", func(t *testing.T) storeapi.Store { return dynamoStore(t, dynaliteClient(t)) }},
		{"dynoxide", func(t *testing.T) storeapi.Store { return dynamoStore(t, dynoxideClient(t)) }},
	}
}

// dynamoStore returns a DynamoStore on a fresh table of its own.
func dynamoStore(t *testing.T, client *dynamodb.Client) storeapi.Store {
	t.Helper()
	table := "locks-" + strings.ReplaceAll(strings.ToLower(t.Name()), "/", "-")
	if err := lockcore.CreateTable(context.Background(), client, table); err != nil {
		t.Fatalf("CreateTable() = %v", err)
	}
	s, err := lockcore.NewDynamoStore(client, table)
	if err != nil {
		t.Fatalf("NewDynamoStore() = %v", err)
	}
	return s
}
