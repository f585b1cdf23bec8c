package lockcore

import (
	"math"
	"math/rand/v2"
	"time"

	"github.com/herdlock/herdlock/lockcore/storeapi"
)

// Predictive waiting. Every releasing holder folds its hold time (from
// sending the acquire to releasing) into a moving average of the key's hold
// times and of their mean deviation, kept on the item across episodes
// (Item.HoldMeanMs and HoldDevMs, in the manner of TCP's round-trip
// estimator). A waiter that finds the lock held and the history steady
// guesses when the holder will be done (its AcquiredAtMs plus the mean) and
// adds a few reads around that guess, a deviation apart, to the ordinary
// pace; with no history, or an erratic one, it adds none. The ordinary pace
// is a floor that the schedule never thins: every read is followed by
// another within one poll interval, so a holder that ends early (fails,
// crashes, succeeds before the guess) is seen as soon as at the fixed pace.
// The guess is only a schedule of reads: every decision still rests on what
// a read shows.

const (
	// holdGain is the weight of a new hold time in the moving averages.
	holdGain = 0.25
	// firstHoldDev is the deviation a history starts with, as a fraction of
	// its first hold: half of it, as TCP starts its round-trip variance
	// (RFC 6298), so that one hold, or two alike, are not taken for a steady
	// history; about three steady holds make one.
	firstHoldDev = 0.5
	// steadyHolds: the history predicts only while its deviation is at most
	// this fraction of its mean; beyond it holds are erratic and waiters
	// keep the ordinary pace, adding no reads.
	steadyHolds = 0.35
	// wakeDevs is how many deviations after the guessed end the first added
	// read comes: late enough that most holders have released by then, so
	// one read answers most waiters.
	wakeDevs = 0.75
	// denseReads is how many reads follow the first added one, a deviation
	// apart.
	denseReads = 2
	// minDensePoll is the shortest interval between the added reads.
	minDensePoll = 5 * time.Millisecond
	// spreadOfMean bounds the deviation that places the added reads, as a
	// fraction of the mean (a sixteenth: they then cover the guess to about
	// a sixth of the mean after it; a later end is seen at the ordinary
	// pace). A young history's deviation is still mostly its starting
	// guess (firstHoldDev), which keeps it from being taken for steady but
	// says little about where the next end falls.
	spreadOfMean = 0.0625
)

// nextHoldHistory folds a hold of length held into the history (mean, dev)
// in milliseconds, and returns the new history. The first hold starts it
// with a deviation of firstHoldDev of its length.
func nextHoldHistory(mean, dev int64, held time.Duration) (int64, int64) {
	h := max(float64(held)/float64(time.Millisecond), 1)
	if mean <= 0 {
		return int64(math.Round(h)), int64(math.Round(h * firstHoldDev))
	}
	m, d := float64(mean), float64(max(dev, 0))
	diff := h - m
	m += holdGain * diff
	d += holdGain * (math.Abs(diff) - d)
	return max(int64(math.Round(m)), 1), int64(math.Round(d))
}

// prediction is a waiter's schedule for one holder: reads added at wake
// (monotonic) and denseReads more every every (a deviation), each jittered
// by a fifth of a deviation (see slot), on top of the ordinary pace. The
// zero value predicts nothing.
type prediction struct {
	wake  time.Time
	every time.Duration
}

// predict returns the schedule for the held item it, read at now
// (monotonic) when the wall clock said nowMs; ok is false when its history
// is missing or erratic, or its guessed end is long past (the holder is
// late: the ordinary pace and the take-over rules apply).
func predict(it storeapi.Item, now time.Time, nowMs int64, poll time.Duration) (p prediction, ok bool) {
	if it.Released || it.HoldMeanMs <= 0 || it.AcquiredAtMs <= 0 {
		return prediction{}, false
	}
	mean, dev := float64(it.HoldMeanMs), float64(max(it.HoldDevMs, 0))
	if dev > steadyHolds*mean {
		return prediction{}, false
	}
	ms := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
	dev = min(dev, spreadOfMean*mean)
	every := min(max(ms(dev), minDensePoll), poll)
	// end is the guessed release, relative to now: no further than two
	// means ahead (a holder whose clock runs ahead of ours, or a guess not
	// worth a long wait).
	end := min(ms(float64(it.AcquiredAtMs)+mean-float64(nowMs)), ms(2*mean))
	wake := end + ms(wakeDevs*dev)
	until := wake + denseReads*every
	if until <= 0 {
		return prediction{}, false
	}
	return prediction{wake: now.Add(max(wake, 0)), every: every}, true
}

// slot returns the time of the schedule's k-th read (from 0): wake plus k
// deviations, jittered by a fifth of a deviation, so that a herd that read
// the same item does not read again at one instant, and the jitter does not
// add up over the reads.
func (p prediction) slot(k int) time.Time {
	s := float64(k) + 0.4*rand.Float64() - 0.2
	return p.wake.Add(time.Duration(s * float64(p.every)))
}

// predicted returns when to read next after a read at now, on the
// predicted schedule, where floor is the ordinary pace's next read: the
// schedule's next read when it comes before floor, else floor, so that the
// schedule only adds reads. A slot less than half a deviation after now is
// dropped, the read at now standing for it; a slot at or after floor is
// kept for a later call.
func (w *waiter) predicted(now, floor time.Time) time.Time {
	for ; w.dense <= denseReads; w.dense++ {
		at := w.pred.slot(w.dense)
		if at.Sub(now) < w.pred.every/2 {
			continue
		}
		if !at.Before(floor) {
			return floor
		}
		w.dense++
		return at
	}
	return floor
}
