package chaos

import (
	"math"
	"time"

	"golang.org/x/sys/unix"
)

// Mono returns the host's CLOCK_MONOTONIC in nanoseconds. All processes on
// the host share it, so the parent and the workers stamp events on one
// timeline; it keeps running while a process is stopped.
func Mono() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		panic("chaos: clock_gettime(CLOCK_MONOTONIC): " + err.Error())
	}
	return ts.Nano()
}

// Skew describes how a worker's wall clock departs from the true one.
type Skew struct {
	OffsetMs int64   `json:"offsetMs"` // constant offset
	DriftPPM float64 `json:"driftPpm"` // rate error, parts per million of true elapsed time
	Steps    []Step  `json:"steps,omitempty"`
}

// Step is a sudden jump of the wall clock by DeltaMs at true time At (Mono
// nanoseconds), as an NTP correction would make.
type Step struct {
	At      int64 `json:"at"`
	DeltaMs int64 `json:"deltaMs"`
}

// skewClock is a lockcore.Clock whose reading is the system wall clock plus
// the skew of the phase the true time falls in. It is safe for concurrent
// use.
type skewClock struct {
	origin int64         // Mono at which drift starts accumulating
	phases []Phase       // to find the skew at a true time
	skews  map[int]*Skew // by phase index; missing means no skew
}

func (c *skewClock) offset(now int64) time.Duration {
	idx := phaseIndex(c.phases, now)
	s := c.skews[idx]
	if s == nil {
		return 0
	}
	d := time.Duration(s.OffsetMs) * time.Millisecond
	d += time.Duration(math.Round(s.DriftPPM * 1e-6 * float64(now-c.origin)))
	for _, st := range s.Steps {
		if now >= st.At {
			d += time.Duration(st.DeltaMs) * time.Millisecond
		}
	}
	return d
}

// Now implements lockcore.Clock.
func (c *skewClock) Now() time.Time {
	return time.Now().Add(c.offset(Mono()))
}
