package lockcore

import (
	"math"
	"time"
)

// Predictive waiting. Every releasing holder folds its hold time (from
// sending the acquire to releasing) into a moving average of the key's hold
// times and of their mean deviation, kept on the item across episodes
// (Item.HoldMeanMs and HoldDevMs, in the manner of TCP's round-trip
// estimator). A waiter that finds the lock held and the history steady
// guesses when the holder will be done (its AcquiredAtMs plus the mean), sleeps
// until shortly after that guess, and then reads at the pace of the
// deviation; with no history, or an erratic one, it keeps the ordinary poll
// interval. The guess is only a schedule of reads: every decision still
// rests on what a read shows.

const (
	// holdGain is the weight of a new hold time in the moving averages.
	holdGain = 0.25
	// steadyHolds: the history predicts only while its deviation is at most
	// this fraction of its mean; beyond it holds are erratic and waiters
	// keep the ordinary pace.
	steadyHolds = 0.35
	// wakeDevs is how many deviations after the guessed end the first read
	// comes: late enough that most holders have released by then, so one
	// read answers most waiters.
	wakeDevs = 0.75
	// denseReads is how many reads follow the first one after the guessed
	// end, a deviation apart, before the ordinary pace resumes.
	denseReads = 2
	// minDensePoll is the shortest interval between the reads around the
	// guessed end.
	minDensePoll = 5 * time.Millisecond
)

// nextHoldHistory folds a hold of length held into the history (mean, dev)
// in milliseconds, and returns the new history. The first hold starts it
// with a deviation of an eighth of its length.
func nextHoldHistory(mean, dev int64, held time.Duration) (int64, int64) {
	h := max(float64(held)/float64(time.Millisecond), 1)
	if mean <= 0 {
		return int64(math.Round(h)), int64(math.Round(h / 8))
	}
	m, d := float64(mean), float64(max(dev, 0))
	diff := h - m
	m += holdGain * diff
	d += holdGain * (math.Abs(diff) - d)
	return max(int64(math.Round(m)), 1), int64(math.Round(d))
}

// prediction is a waiter's schedule for one holder: read first at wake
// (monotonic), then denseReads more times every every (a deviation), each
// read jittered by a fifth of a deviation (see waiter.next); after that, the
// ordinary pace. The zero value predicts nothing.
type prediction struct {
	wake  time.Time
	every time.Duration
}

// predict returns the schedule for the held item it, read at now
// (monotonic) when the wall clock said nowMs; ok is false when its history
// is missing or erratic, or its guessed end is long past (the holder is
// late: the ordinary pace and the take-over rules apply).
func predict(it Item, now time.Time, nowMs int64, poll time.Duration) (p prediction, ok bool) {
	if it.Released || it.HoldMeanMs <= 0 || it.AcquiredAtMs <= 0 {
		return prediction{}, false
	}
	mean, dev := float64(it.HoldMeanMs), float64(max(it.HoldDevMs, 0))
	if dev > steadyHolds*mean {
		return prediction{}, false
	}
	ms := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
	every := min(max(ms(dev), minDensePoll), poll)
	// end is the guessed release, relative to now: no further than two
	// means ahead (a holder whose clock runs ahead of ours, or a guess not
	// worth a long sleep).
	end := min(ms(float64(it.AcquiredAtMs)+mean-float64(nowMs)), ms(2*mean))
	wake := end + ms(wakeDevs*dev)
	until := wake + denseReads*every
	if until <= 0 {
		return prediction{}, false
	}
	return prediction{wake: now.Add(max(wake, 0)), every: every}, true
}
