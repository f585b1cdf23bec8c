package storetest

import (
	"errors"
	"strings"
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

// runShiftedSizeEdge requires r's store under test to accept sizeEdge's
// release up to exactly refLimit - m.sizeEdgeShift bytes of reference, with
// the reference's answers, and to refuse one a byte longer, which the
// reference accepts, with ErrItemTooLarge.
func runShiftedSizeEdge(t *testing.T, r *runner, refLimit int, m ServerModel) {
	want := refLimit - m.sizeEdgeShift
	for _, n := range []int{want, want + 1} {
		s := r.newStepper(0)
		for i, o := range sizeEdge(n) {
			ref, got, diffs, err := s.step(t.Context(), o)
			if err != nil {
				t.Fatalf("reference of %d bytes, step %d: %v", n, i+1, err)
			}
			refused := n > want && o.kind == opRelease
			switch {
			case refused && (got.class != classError || !errors.Is(got.err, lockcore.ErrItemTooLarge)):
				t.Errorf("reference of %d bytes (limit: the reference store's %d, %s's by its model %d): store under test = %s (%v), want ErrItemTooLarge",
					n, refLimit, m.Name(), want, got.class, got.err)
			case !refused && len(diffs) > 0:
				t.Errorf("reference of %d bytes (limit: the reference store's %d, %s's by its model %d), step %d:\nreference: %s\nstore under test: %s (%v)\n  %s",
					n, refLimit, m.Name(), want, i+1, ref.class, got.class, got.err, strings.Join(diffs, "\n  "))
			}
		}
	}
}
