package bench

import (
	"context"
	"testing"

	"github.com/herdlock/herdlock/lockcore"
)

// The stores of the Dynoxide figures keep release announcements: every
// wrapper of the SDK client passes PutItem through (without it a
// DynamoStore keeps none, and a throttled herd silently polls the lock item
// alone).
func TestActorStoreAnnounces(t *testing.T) {
	ctx := context.Background()
	a := benchEnv(t).NewActor()
	key := lockcore.Key{Group: "bench", ID: keyName("announce")}
	ann := lockcore.Announcement{Key: key, Shard: 3, Fence: 7, ResultRef: "ref", ReleasedAtMs: 1_700_000_000_000}
	for _, store := range []lockcore.Store{a.Store, mustStore(t, &recordingAPI{DynamoAPI: a.API})} {
		an, ok := store.(lockcore.Announcer)
		if !ok {
			t.Fatalf("%T is not a lockcore.Announcer", store)
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
