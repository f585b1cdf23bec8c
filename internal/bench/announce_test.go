package bench

import (
	"bytes"
	"context"
	"testing"

	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/lockcore/storeapi"
)

// The stores of the Dynoxide figures keep release announcements: every
// wrapper of the SDK client passes PutItem through (without it a
// DynamoStore keeps none, and a throttled herd silently polls the lock item
// alone).
func TestActorStoreAnnounces(t *testing.T) {
	ctx := context.Background()
	a := benchEnv(t).NewActor()
	key := lockcore.Key{Group: "bench", ID: keyName("announce")}
	ann := storeapi.Announcement{Key: key, Shard: 3, Fence: 7, ResultRef: "ref", ReleasedAtMs: 1_700_000_000_000}
	for _, store := range []storeapi.Store{a.Store, mustStore(t, &recordingAPI{DynamoAPI: a.API})} {
		an, ok := store.(storeapi.Announcer)
		if !ok {
			t.Fatalf("%T is not a storeapi.Announcer", store)
		}
		if _, err := an.Announce(ctx, ann); err != nil {
			t.Fatalf("Announce() = %v", err)
		}
		got, found, err := an.GetAnnouncement(ctx, key, 3)
		if err != nil || !found || got.Fence != 7 || got.ResultRef != "ref" {
			t.Errorf("GetAnnouncement() = %+v, %v, %v; want fence 7, ref", got, found, err)
		}
	}
}

func mustStore(t *testing.T, api lockcore.DynamoAPI) *lockcore.DynamoStore {
	t.Helper()
	s, err := lockcore.NewDynamoStore(api, LockTable)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestRealHotHerdCI is figure 10 at CI size, crowded: 100 invocations
// within 200 ms on a cold key, each in a new execution environment, the
// holder working 900 ms, through the capacity model cut to 30 WCU/s and
// 60 RCU/s per item in front of Dynoxide, in real time. The waiters' polls
// outgrow the item's read capacity, and the throttled waiters read the
// key's announcement shards (which needs PutItem through every layer, and
// a store that keeps announcements); the herd still ends with one fetch and
// nobody FAILED.
func TestRealHotHerdCI(t *testing.T) {
	ctx := context.Background()
	env, err := StartRealHotEnv(ctx, benchEnv(t).Server.Endpoint(), ciCrowdedCapacity)
	if err != nil {
		t.Fatalf("StartRealHotEnv() = %v", err)
	}
	r := RunHotScenario(ctx, env, HotModes()[0], HotScenario{N: 100, Arrival: HotArrival / 5, Work: 3 * HerdWork})
	var buf bytes.Buffer
	_ = WriteHotTable(&buf, []HotResult{r}, DefaultHotTargets(lockcore.DefaultPollInterval))
	t.Logf("\n%s", buf.String())
	if r.Outcomes[Failed] != 0 || r.Fetches != 1 {
		t.Errorf("FAILED %d, fetches %d; want 0 and 1; errors %v", r.Outcomes[Failed], r.Fetches, r.Errors)
	}
	if r.Throttled == 0 || r.AnnReads == 0 {
		t.Errorf("%d of %d requests on the item throttled, %d announcement reads; want some of each", r.Throttled, r.Requests, r.AnnReads)
	}
}
