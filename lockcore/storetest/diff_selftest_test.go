package storetest

import (
	"context"
	"errors"
	"flag"
	"strings"
	"testing"

	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/lockcore/storeapi"
)

var (
	diffSteps = flag.Int("herdlock.diff.steps", 10_000, "store calls per differential run")
	diffSeed  = flag.Uint64("herdlock.diff.seed", 0, "seed of the differential runs (0: random, printed)")
)

// diffOptions returns the options of a run from the flags.
func diffOptions(m ServerModel) DiffOptions {
	return DiffOptions{Seed: *diffSeed, Steps: *diffSteps, Model: m}
}

// reproduce is the hint printed with a failure.
func reproduce(t *testing.T, rep *DiffReport) {
	t.Helper()
	if rep.Failure != nil {
		t.Logf("reproduce: go test ./lockcore/storetest -run '^%s$' -herdlock.diff.seed=%d -herdlock.diff.steps=%d", t.Name(), rep.Seed, *diffSteps)
	}
}

// freshIgnoredOnWallClock is a store with lockcore's defect of ignoring a
// fresh success on the wall-clock branch of Acquire's condition: it drops
// FreshSuccessSinceMs whenever that branch would admit the request.
type freshIgnoredOnWallClock struct{ *lockcore.MemoryStore }

func (s freshIgnoredOnWallClock) Acquire(ctx context.Context, req storeapi.AcquireRequest) (storeapi.Item, error) {
	if cur, found, err := s.Get(ctx, req.Key); err == nil && found && req.UseWallClock {
		limit := req.NowMs - req.ClockAllowance.Milliseconds()
		if cur.LeaseUntilMs < limit || cur.ExpiresAtMs < limit {
			req.FreshSuccessSinceMs = 0
		}
	}
	return s.MemoryStore.Acquire(ctx, req)
}

// kinderRelease is a store kinder than DynamoDB: a release retried with
// the other result, over its own published release, succeeds (and changes
// nothing) instead of failing its condition.
type kinderRelease struct{ *lockcore.MemoryStore }

func (s kinderRelease) Release(ctx context.Context, req storeapi.ReleaseRequest) (storeapi.Item, error) {
	if cur, found, err := s.Get(ctx, req.Key); err == nil && found && cur.Revision == req.Revision && cur.Released && req.Result.Valid() {
		return cur, nil
	}
	return s.MemoryStore.Release(ctx, req)
}

// kinderRenew is a store kinder than DynamoDB: a renewal of a released item
// by its last holder succeeds (returning the item unchanged) instead of
// failing its condition.
type kinderRenew struct{ *lockcore.MemoryStore }

func (s kinderRenew) Renew(ctx context.Context, req storeapi.RenewRequest) (storeapi.Item, error) {
	it, err := s.MemoryStore.Renew(ctx, req)
	var ce *storeapi.ConditionError
	if errors.As(err, &ce) && ce.Current != nil && ce.Current.Revision == req.Revision && ce.Current.Released {
		return *ce.Current, nil
	}
	return it, err
}

// episodeErased is a store with lockcore's old defect of freeing a
// possible ghost with zero episode fields: it ignores KeepEpisode.
type episodeErased struct{ *lockcore.MemoryStore }

func (s episodeErased) Release(ctx context.Context, req storeapi.ReleaseRequest) (storeapi.Item, error) {
	req.KeepEpisode = false
	return s.MemoryStore.Release(ctx, req)
}

// publicationOverwrittenByFree is a store with lockcore's old defect of
// recording the freeing of a write nobody held as the item's last
// publication: it ignores Unheld, so a holder's publication is no longer
// recognised once a late copy over it was freed.
type publicationOverwrittenByFree struct{ *lockcore.MemoryStore }

func (s publicationOverwrittenByFree) Release(ctx context.Context, req storeapi.ReleaseRequest) (storeapi.Item, error) {
	req.Unheld = false
	return s.MemoryStore.Release(ctx, req)
}

// oldHeldBackGuard is a store with the old guard (C): it also refuses a
// recent failure whose episode reached MaxAttempts, after its not-before.
type oldHeldBackGuard struct{ *lockcore.MemoryStore }

func (s oldHeldBackGuard) Acquire(ctx context.Context, req storeapi.AcquireRequest) (storeapi.Item, error) {
	if cur, found, err := s.Get(ctx, req.Key); err == nil && found && req.MaxAttempts > 0 && cur.Released &&
		cur.Result == lockcore.Failure && cur.FailRecentUntilMs > req.NowMs && cur.Failures >= req.MaxAttempts {
		return storeapi.Item{}, &storeapi.ConditionError{Op: "acquire", Current: &cur}
	}
	return s.MemoryStore.Acquire(ctx, req)
}

// reacquiresOwnRevision is a store without guard (D): a late copy of an
// applied acquire acquires its released item again.
type reacquiresOwnRevision struct{ *lockcore.MemoryStore }

func (s reacquiresOwnRevision) Acquire(ctx context.Context, req storeapi.AcquireRequest) (storeapi.Item, error) {
	if cur, found, err := s.Get(ctx, req.Key); err == nil && found && cur.Revision == req.Revision && cur.Released {
		req.Revision += "-late" // what the old condition let through
		it, err := s.MemoryStore.Acquire(ctx, req)
		it.Revision = cur.Revision
		return it, err
	}
	return s.MemoryStore.Acquire(ctx, req)
}

// announcesOverLater is a store whose announcements replace a later fence.
type announcesOverLater struct{ *lockcore.MemoryStore }

func (s announcesOverLater) Announce(ctx context.Context, a storeapi.Announcement) (bool, error) {
	if cur, found, err := s.GetAnnouncement(ctx, a.Key, a.Shard); err == nil && found && cur.Fence > a.Fence {
		// Written over the later fence, which it replaces.
		b := a
		b.Fence = cur.Fence + 1
		if _, err := s.MemoryStore.Announce(ctx, b); err != nil {
			return false, err
		}
		return true, nil
	}
	return s.MemoryStore.Announce(ctx, a)
}

// TestDiffSelfTest checks that the differential test catches a store that
// differs from the reference, and shrinks the case to the few steps that
// show it.
func TestDiffSelfTest(t *testing.T) {
	tests := []struct {
		name     string
		sut      storeapi.Store
		maxSteps int    // the shortest sequences that show the defect
		lastStep string // what the failing step is
	}{
		// Acquire, release with success, wall-clock acquire past the lease
		// with a fresh-success bound at or before the release.
		{"FreshSuccessIgnoredOnWallClockBranch", freshIgnoredOnWallClock{lockcore.NewMemoryStore()}, 3, "Acquire"},
		// Acquire, release, release with the other result.
		{"KinderRelease", kinderRelease{lockcore.NewMemoryStore()}, 3, "Release"},
		// Acquire, release, renewal of the released item.
		{"KinderRenew", kinderRenew{lockcore.NewMemoryStore()}, 3, "Renew"},
		// Acquire, release with failure, acquire, release keeping the
		// episode.
		{"EpisodeErasedByFree", episodeErased{lockcore.NewMemoryStore()}, 4, "Release"},
		// Acquire, the freeing of that write as nobody's (it records a
		// publication).
		{"PublicationOverwrittenByFree", publicationOverwrittenByFree{lockcore.NewMemoryStore()}, 3, "Release"},
		// Acquire, release with failure, acquire past the not-before of
		// an episode at its attempt bound.
		{"OldHeldBackGuard", oldHeldBackGuard{lockcore.NewMemoryStore()}, 3, "Acquire"},
		// Acquire, release, the same acquire again.
		{"ReacquiresOwnRevision", reacquiresOwnRevision{lockcore.NewMemoryStore()}, 3, "Acquire"},
		// Announce at two fences, the later first.
		{"AnnouncesOverLater", announcesOverLater{lockcore.NewMemoryStore()}, 3, "Announce"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rep, err := RunDiff(t.Context(), lockcore.NewMemoryStore(), tt.sut, DiffOptions{Seed: *diffSeed, Steps: 5_000})
			if err != nil {
				t.Fatalf("RunDiff() = %v", err)
			}
			f := rep.Failure
			if f == nil {
				t.Fatalf("RunDiff() (seed %d) found no difference, want one", rep.Seed)
			}
			t.Logf("seed %d: %s", rep.Seed, f)
			if !f.Complete || len(f.Steps) > tt.maxSteps {
				t.Errorf("shrunk to %d steps (complete %t), want at most %d", len(f.Steps), f.Complete, tt.maxSteps)
			}
			if last := f.Steps[len(f.Steps)-1]; strings.Fields(last)[1] != tt.lastStep {
				t.Errorf("failing step = %q, want a %s", last, tt.lastStep)
			}
		})
	}
}

// TestDiffAgreesWithItself checks that a store run against a copy of
// itself shows no difference (the comparison raises no false alarm) and
// that the generator reaches every kind of step.
func TestDiffAgreesWithItself(t *testing.T) {
	Diff(t, lockcore.NewMemoryStore(), lockcore.NewMemoryStore(), DiffOptions{Seed: *diffSeed, Steps: *diffSteps})
}
