package lockcore

import (
	"math"
	"time"

	"github.com/herdlock/herdlock/internal/lockcoreopts"
)

// The middleware reads back the logger, metrics and release timeout a
// user's options set (see package lockcoreopts).
func init() { lockcoreopts.Read = readOptions }

// readOptions applies opts to options that have none of the settings and
// returns the logger, metrics and release timeout they set, and whether
// they set the fresh-success window and the TTL.
func readOptions(opts any) lockcoreopts.Settings {
	list, _ := opts.([]Option)
	const unset = time.Duration(math.MinInt64) // no option sets it: a negative one is refused
	o := options{freshSuccess: unset, ttl: unset}
	for _, opt := range list {
		if opt != nil {
			opt(&o)
		}
	}
	s := lockcoreopts.Settings{Logger: o.logger, ReleaseTimeout: o.releaseTimeout,
		AutoReleaseTimeout: o.autoRelease, Lease: o.lease,
		FreshSuccess: o.freshSuccess != unset, TTL: o.ttl != unset}
	if o.metrics != nil {
		s.Metrics = o.metrics
	}
	return s
}
