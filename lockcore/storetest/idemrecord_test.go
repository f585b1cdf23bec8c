package storetest

import (
	"context"
	"errors"
	"testing"

	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/lockcore/storeapi"
)

// unfencedRelease completes or fails the record whoever holds it, as the
// Powertools stores' unconditional update and delete do.
type unfencedRelease struct{ *lockcore.MemoryStore }

func (s unfencedRelease) Release(ctx context.Context, req storeapi.ReleaseRequest) (storeapi.Item, error) {
	it, err := s.MemoryStore.Release(ctx, req)
	var ce *storeapi.ConditionError
	if errors.As(err, &ce) && ce.Current != nil && !ce.Current.Released {
		req.Revision = ce.Current.Revision
		return s.MemoryStore.Release(ctx, req)
	}
	return it, err
}

// answerDropped completes the record without its answer.
type answerDropped struct{ *lockcore.MemoryStore }

func (s answerDropped) Release(ctx context.Context, req storeapi.ReleaseRequest) (storeapi.Item, error) {
	req.Answer = nil
	return s.MemoryStore.Release(ctx, req)
}

// notBeforeIgnored admits a duplicate before a kept error's not-before.
type notBeforeIgnored struct{ *lockcore.MemoryStore }

func (s notBeforeIgnored) Acquire(ctx context.Context, req storeapi.AcquireRequest) (storeapi.Item, error) {
	req.MaxAttempts = 0
	return s.MemoryStore.Acquire(ctx, req)
}

// retentionInSeconds compares the retention in whole seconds, the unit
// confusion of a store that keeps epoch seconds.
type retentionInSeconds struct{ *lockcore.MemoryStore }

func (s retentionInSeconds) Acquire(ctx context.Context, req storeapi.AcquireRequest) (storeapi.Item, error) {
	req.FreshSuccessSinceMs = req.FreshSuccessSinceMs / 1000 * 1000
	return s.MemoryStore.Acquire(ctx, req)
}

// TestIdempotencyRecordLifeCatches checks that the differential case of
// an idempotency record's life tells a store that gets the record wrong
// from the MemoryStore, and that the MemoryStore agrees with itself.
func TestIdempotencyRecordLifeCatches(t *testing.T) {
	tests := []struct {
		name    string
		sut     storeapi.Store
		wantDif bool
	}{
		{"MemoryStore", lockcore.NewMemoryStore(), false},
		{"UnfencedRelease", unfencedRelease{lockcore.NewMemoryStore()}, true},
		{"AnswerDropped", answerDropped{lockcore.NewMemoryStore()}, true},
		{"NotBeforeIgnored", notBeforeIgnored{lockcore.NewMemoryStore()}, true},
		{"RetentionInSeconds", retentionInSeconds{lockcore.NewMemoryStore()}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &runner{ref: lockcore.NewMemoryStore(), sut: tt.sut, opts: DiffOptions{Model: ExactModel()}.withDefaults(), prefix: "idem-" + randomHex(6)}
			s := r.newStepper(0)
			differs := false
			for i, o := range newIdemLife(lockcore.Key{}).ops() {
				_, _, diffs, err := s.step(t.Context(), o)
				if err != nil {
					t.Fatalf("step %d: %v", i+1, err)
				}
				differs = differs || len(diffs) > 0
			}
			if differs != tt.wantDif {
				t.Errorf("the record's life differs from the MemoryStore's: %t, want %t", differs, tt.wantDif)
			}
		})
	}
}
