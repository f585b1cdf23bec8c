package lockmw

import (
	"math"
	"time"

	"github.com/herdlock/herdlock/internal/lockmwopts"
)

// The layers above read back the settings of theirs a user's lockmw
// options set (see package lockmwopts).
func init() { lockmwopts.Read = readOptions }

// readOptions applies opts to options that have none of the settings and
// returns what they set.
func readOptions(opts any) lockmwopts.Settings {
	list, _ := opts.([]Option)
	const unset = time.Duration(math.MinInt64) // no option sets it: a negative margin is refused
	o := options{margin: unset}
	for _, opt := range list {
		if opt != nil {
			opt(&o)
		}
	}
	return lockmwopts.Settings{LockOptions: o.lockOpts, SafetyMargin: o.margin != unset, MaxInlineBytes: o.answers.MaxInlineBytes}
}
