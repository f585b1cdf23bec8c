package lockcore_test

import (
	"bytes"
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/herdlock/herdlock/lockcore"
)

// behindClock is a host's wall clock that runs by a fixed amount behind.
type behindClock struct{ by time.Duration }

func (c behindClock) Now() time.Time { return time.Now().Add(-c.by) }

// A herd fetches once when the holder's wall clock runs behind the
// waiter's, within the clock allowance (ε, 1s): the waiter's first write
// was refused over the holder, so the holder's success is its answer (its
// fence is the one it saw holding), however the two clocks read. A late
// copy of that first write, landing just after the success, must not
// take the lock over it: guard B of the first write must keep it off a
// success the wait would take, as it does when the clocks agree (see
// TestAHerdFetchesOnceWhenALateCopyLandsAfterThePublishedSuccess). With
// the holder 500ms behind and a 200ms fetch, the success's release time
// reads 300ms before the waiter's call began.
func TestALateFirstWriteStaysOffTheSuccessOfAHolderWhoseClockIsBehind(t *testing.T) {
	t.Skip("known gap: the wait's first write carries guard B from the call's start (newsSinceMs startMs+1) by the waiter's clock, " +
		"while the wait takes the holder's success by its fence; a success released by a clock behind by less than ε reads as older than the call, " +
		"so a late copy of the first write lands over it and the waiter holds it (a second upstream call). Closing it means refusing the first write " +
		"over a success released within ε before the call, a change to WithFreshSuccess(0)'s documented behaviour")
	synctest.Test(t, func(t *testing.T) {
		mem := lockcore.NewMemoryStore()
		fetcher := newLock(t, mem, "fetcher", lockcore.WithClocks(lockcore.Clocks{Wall: behindClock{500 * time.Millisecond}}))
		mustAcquire(t, fetcher)
		store := newHeldUpCopy(mem, nil)
		w := startWaiting(newLock(t, store, "waiter"))
		synctest.Wait() // refused over the fetcher: waiting
		if store.n("acquire") != 1 {
			t.Fatalf("waiter's acquires = %d, want 1", store.n("acquire"))
		}
		time.Sleep(200 * time.Millisecond) // the fetcher's work
		answer := []byte(`{"rate":1.0842}`)
		if err := fetcher.Release(context.Background(), lockcore.Success, "ref", lockcore.WithAnswer(answer)); err != nil {
			t.Fatalf("fetcher's Release() = %v", err)
		}
		store.land(t) // the held-up copy of the waiter's first write arrives
		got := <-w.done
		if got.err != nil || got.res.Outcome != lockcore.Released || !bytes.Equal(got.res.Answer, answer) {
			if got.res.Outcome == lockcore.Acquired {
				_ = w.l.Release(context.Background(), lockcore.Success, "again")
			}
			t.Fatalf("waiter = %v (fence %d), answer %q, %v; want RELEASED with the fetcher's answer (ACQUIRED is a second upstream call)",
				got.res.Outcome, got.res.Fence, got.res.Answer, got.err)
		}
	})
}
