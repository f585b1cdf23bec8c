package sqsmw_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/herdlock/herdlock/internal/faultstore"
	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/middleware/sqsmw"
)

// A key's release may use three quarters of the batch margin
// (BatchTime.Margin): against a store whose releases never answer, a key
// whose handler returns early holds up its lane for its release's budget,
// not for the rest of its share, and the later keys of the lane still get
// their time. Ten keys one at a time, each done in 100 ms, in a 30 s
// function: each takes at most 1.6 s, 16 s in all.
func TestHangingReleasesDoNotEatLaterKeysShares(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := &worker{work: 100 * time.Millisecond}
		h := must(sqsmw.New(w.handle, faultstore.UnansweredReleases{Store: lockcore.NewMemoryStore()}, bodyKey, quiet(),
			sqsmw.WithBatchTime(sqsmw.BatchTime{Concurrency: 1})))
		ctx, cancel := invocation(30 * time.Second)
		defer cancel()
		start := time.Now()
		resp, _ := h(ctx, batchOf(t, letters(10)...))
		if got := failedIDs(resp); len(got) != 0 {
			t.Errorf("failed %q, want none: each key's work and release fit in the batch", got)
		}
		turns := w.snapshot()
		if len(turns) != 10 {
			t.Errorf("%d keys ran, want 10", len(turns))
		}
		for i := 1; i < len(turns); i++ {
			if gap := turns[i].began.Sub(turns[i-1].ended); gap > 1500*time.Millisecond {
				t.Errorf("key %s began %v after %s's handler returned (%v after the batch's start); want at most 1.5 s, three quarters of the margin",
					turns[i].key, gap, turns[i-1].key, turns[i].began.Sub(start))
			}
		}
	})
}
