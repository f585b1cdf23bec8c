package lockcore_test

import (
	"context"
	"testing"

	"github.com/herdlock/herdlock/lockcore"
)

// TestKeepEpisodeCountsNoAttempt: a failure release with WithKeepEpisode
// (the hold made no attempt: its input was bad) frees the lock and leaves
// the item's failure episode as the previous failure wrote it, on every
// store, so the next newcomer may try at once; a plain failure release
// counts the attempt, and with lockcore's default of two attempts per
// episode the newcomer is held back.
func TestKeepEpisodeCountsNoAttempt(t *testing.T) {
	tests := []struct {
		name         string
		opts         []lockcore.ReleaseOption
		wantFailures int64
		wantReason   string
		wantFree     bool
	}{
		{"kept", []lockcore.ReleaseOption{lockcore.WithKeepEpisode(), lockcore.WithFailureReason("bad_request")}, 1, "upstream_down", true},
		{"counted", []lockcore.ReleaseOption{lockcore.WithFailureReason("bad_request")}, 2, "bad_request", false},
	}
	for _, st := range everyStore() {
		for _, tt := range tests {
			t.Run(st.name+"/"+tt.name, func(t *testing.T) {
				s := st.new(t)
				first := newLock(t, s, "a")
				mustAcquire(t, first)
				if err := first.Release(context.Background(), lockcore.Failure, "", lockcore.WithFailureReason("upstream_down")); err != nil {
					t.Fatalf("Release() = %v", err)
				}
				second := newLock(t, s, "b")
				mustAcquire(t, second)
				if err := second.Release(context.Background(), lockcore.Failure, "", tt.opts...); err != nil {
					t.Fatalf("Release(%s) = %v", tt.name, err)
				}
				it, _, err := s.Get(context.Background(), second.Key())
				if err != nil {
					t.Fatal(err)
				}
				if !it.Released || it.Failures != tt.wantFailures || it.FailReason != tt.wantReason {
					t.Errorf("item released %t, failures %d, reason %q; want released, %d, %q", it.Released, it.Failures, it.FailReason, tt.wantFailures, tt.wantReason)
				}
				if ok, err := newLock(t, s, "c").Acquire(context.Background()); ok != tt.wantFree || err != nil {
					t.Errorf("newcomer's Acquire() = %t, %v; want %t", ok, err, tt.wantFree)
				}
			})
		}
	}
}
