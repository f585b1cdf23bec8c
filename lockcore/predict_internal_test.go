package lockcore

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/herdlock/herdlock/lockcore/storeapi"
)

// Whatever a held item's history says, a waiter's next read after any
// read comes within the ordinary pace's longest interval (the poll
// interval plus its 20 % jitter), and the pace's own reads keep its
// intervals: a prediction only adds reads between them, at most
// denseReads+1, and none for an erratic history.
func TestPredictedScheduleKeepsThePace(t *testing.T) {
	l, err := New(NewMemoryStore(), Params{LockID: "EUR-USD", LockGroup: "fx", HolderName: "w", AccountID: 7, AppID: 9})
	if err != nil {
		t.Fatal(err)
	}
	poll := l.o.pollInterval
	longest, shortest := poll*12/10, poll*8/10
	rng := rand.New(rand.NewPCG(5, 6))
	tests := []struct {
		name           string
		minDev, maxDev float64 // the history's deviation, as a fraction of its mean
		maxAdded       int
	}{
		{"steady", 0, steadyHolds, denseReads + 1},
		{"erratic", steadyHolds + 0.01, 2, 0},
	}
	for _, tt := range tests {
		for i := range 500 {
			mean := time.Duration(1+rng.Int64N(int64(60*time.Second/time.Millisecond))) * time.Millisecond
			ratio := tt.minDev + rng.Float64()*(tt.maxDev-tt.minDev)
			// acquired between two means ago and now
			ago := time.Duration(rng.Float64() * 2 * float64(mean))
			it := storeapi.Item{Revision: fmt.Sprint(i), AcquiredAtMs: l.nowMs() - ago.Milliseconds(),
				HoldMeanMs: mean.Milliseconds(), HoldDevMs: int64(ratio * float64(mean.Milliseconds()))}
			w := &waiter{l: l}
			w.observe(&it)
			now, added := time.Now(), 0
			var paced time.Time // the pace's last read
			for range 2*int(mean/poll) + 10 {
				if now.Before(w.floorAt) {
					added++ // before the pace's next read: the schedule added it
				} else {
					// The pace's own reads keep its intervals, whatever
					// the schedule added between them.
					if gap := now.Sub(paced); !paced.IsZero() && (gap < shortest || gap > longest) {
						t.Fatalf("%s: history %v ± %.0f%%, acquired %v ago: the pace read %v after its read before, want within [%v, %v]",
							tt.name, mean, 100*ratio, ago, gap, shortest, longest)
					}
					paced = now
				}
				w.reading = w.added // as poll notes the read it makes
				at := w.next(now)
				gap := at.Sub(now)
				if gap <= 0 || gap > longest {
					t.Fatalf("%s: history %v ± %.0f%%, acquired %v ago: a read %v after the one before, want within (0, %v]",
						tt.name, mean, 100*ratio, ago, gap, longest)
				}
				now = at
			}
			if added > tt.maxAdded {
				t.Errorf("%s: history %v ± %.0f%%, acquired %v ago: %d reads added to the pace, want at most %d",
					tt.name, mean, 100*ratio, ago, added, tt.maxAdded)
			}
		}
	}
}
