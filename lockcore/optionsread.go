package lockcore

import "github.com/herdlock/herdlock/internal/lockcoreopts"

// The middleware reads back the logger, metrics and release timeout a
// user's options set (see package lockcoreopts).
func init() { lockcoreopts.Read = readOptions }

// readOptions applies opts to options that have none of the settings and
// returns the logger, metrics and release timeout they set.
func readOptions(opts any) lockcoreopts.Settings {
	list, _ := opts.([]Option)
	var o options
	for _, opt := range list {
		if opt != nil {
			opt(&o)
		}
	}
	s := lockcoreopts.Settings{Logger: o.logger, ReleaseTimeout: o.releaseTimeout}
	if o.metrics != nil {
		s.Metrics = o.metrics
	}
	return s
}
