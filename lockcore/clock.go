package lockcore

import "time"

// Clock is the wall clock whose readings the lock stores (heartbeat, lease
// and hard-maximum times) and compares on the wall-clock fast path. Waiting,
// renewal and validity are measured on the process's monotonic clock and do
// not use it. Tests and the fault harness inject a skewed Clock to show that
// safety does not depend on it.
type Clock interface {
	Now() time.Time
}

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }
