// Package lockcoreopts reads back, from lockcore options a user gave
// lockmw (lockmw.WithLockOptions), the settings lockmw sets itself for
// every lock: the logger, the metrics and the release timeouts, so that
// lockmw can honour them instead of overriding them. lockcore fills in
// [Read] when it is initialised; this package does not import lockcore.
package lockcoreopts

import (
	"log/slog"
	"time"
)

// Settings are what a list of lockcore options sets of the lock's logger,
// metrics and release timeout, and whether it sets the fresh-success
// window and the TTL (which a layer that sets them itself refuses rather
// than overrides). A zero field was not set.
type Settings struct {
	Logger         *slog.Logger
	Metrics        Metrics
	ReleaseTimeout time.Duration
	// AutoReleaseTimeout is lockcore.StoreCalls.AutoReleaseTimeout.
	AutoReleaseTimeout time.Duration
	// Lease is the lease lockcore.WithLease set.
	Lease        time.Duration
	FreshSuccess bool // lockcore.WithFreshSuccess was given
	TTL          bool // lockcore.WithTTL was given
}

// Metrics is lockcore.Metrics.
type Metrics interface {
	AddMetric(name, unit string, value float64)
}

// Read returns what opts, a []lockcore.Option, set. lockcore sets it in
// its init; opts of another type read as nothing set.
var Read func(opts any) Settings
