package storetest

import (
	"testing"

	"github.com/herdlock/herdlock/internal/dynalite"
	"github.com/herdlock/herdlock/internal/dynoxide/dynoxidetest"
	"github.com/herdlock/herdlock/lockcore"
)

// TestDiffDynoxide runs against Dynoxide directly: it returns the item
// with a failed condition by itself, so no proxy stands between the store
// and the server, and DynamoStore's ALL_OLD path is what is compared.
func TestDiffDynoxide(t *testing.T) {
	t.Parallel()
	srv := dynoxidetest.Start(t)
	s, counter := dynamoStore(t, dynalite.NewClient(srv.Endpoint()))
	t.Run("cases", func(t *testing.T) { runCases(t, s, DynoxideModel()) })
	t.Run("size-limit-edge", func(t *testing.T) { runSizeEdge(t, s, DynoxideModel()) })
	rep := Diff(t, lockcore.NewMemoryStore(), s, diffOptions(DynoxideModel()))
	reproduce(t, rep)
	with, without := counter.WithItem.Load(), counter.WithoutItem.Load()
	t.Logf("failed conditions: %d with the item, %d without (absent items)", with, without)
	if with == 0 && rep.Failure == nil {
		t.Errorf("failed conditions with the item = 0, want some (Dynoxide returns ALL_OLD)")
	}
	if rep.Coverage["renew/absent"] > 0 && without == 0 && rep.Failure == nil {
		t.Errorf("failed conditions without an item = 0, want some (renewals of absent keys)")
	}
}
