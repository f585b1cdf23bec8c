package chaos

import (
	"context"
	"errors"
	"time"

	"github.com/herdlock/herdlock/lockcore"
)

// validEvery is how often a worker samples its hold's Valid().
const validEvery = 10 * time.Millisecond

// validWatch samples a hold's Valid() from the moment it is acquired until
// it turns false or the holder starts to release, and then emits an
// EvValid event: the hold's Valid() interval as its caller saw it, and the
// cause of its context when it ended. The contract check on two holders
// compares these intervals (check_contract.go). A killed worker emits
// none; a frozen one takes no samples while it is stopped.
type validWatch struct {
	quit chan struct{}
	done chan struct{}
}

// watchValid starts the watch of h, the hold of key.
func (w *worker) watchValid(key string, h holder) *validWatch {
	vw := &validWatch{quit: make(chan struct{}), done: make(chan struct{})}
	ev := Event{Kind: EvValid, Key: key, Rev: h.Revision(), Fence: h.Fence()}
	go func() {
		defer close(vw.done)
		defer func() { w.emit(ev) }()
		tick := time.NewTicker(validEvery)
		defer tick.Stop()
		for {
			before := Mono()
			ok := h.Valid()
			switch {
			case ok && ev.T == 0:
				ev.T, ev.T2 = Mono(), before
			case ok:
				ev.T2 = before
			default:
				ev.Until, ev.Cause = before, holdCause(h.Context())
				return
			}
			select {
			case <-vw.quit:
				return
			case <-tick.C:
			}
		}
	}()
	return vw
}

// stop ends the watch and waits for its event.
func (vw *validWatch) stop() {
	close(vw.quit)
	<-vw.done
}

// Lateness the stall monitor reports: a wake-up of its ticker this much
// later than due.
const (
	stallEvery = 20 * time.Millisecond
	stallAfter = 100 * time.Millisecond
)

// watchStalls reports, as EvStall events, the stretches in which the
// process was not scheduled: its ticker woke stallAfter or more late.
// It runs for the life of the process.
func (w *worker) watchStalls() {
	tick := time.NewTicker(stallEvery)
	defer tick.Stop()
	last := Mono()
	for range tick.C {
		now := Mono()
		if time.Duration(now-last) > stallEvery+stallAfter {
			w.emit(Event{T: last, T2: now, Kind: EvStall})
		}
		last = now
	}
}

// holdCause names the cause of a holder's context: "" while it is alive.
func holdCause(ctx context.Context) string {
	if ctx.Err() == nil {
		return ""
	}
	switch err := context.Cause(ctx); {
	case errors.Is(err, lockcore.ErrLeaseLost):
		return "lease_lost"
	case errors.Is(err, lockcore.ErrMaxHoldReached):
		return "max_hold"
	case errors.Is(err, lockcore.ErrReleased):
		return "released"
	case errors.Is(err, lockcore.ErrAborted):
		return "aborted"
	default:
		return "other"
	}
}
