// Package lockmwopts reads back, from lockmw options a user gave a layer
// above lockmw (sqsmw.WithLockmwOptions, idempotency.WithLockmwOptions),
// the settings that layer sets itself, so that it can refuse them with a
// configuration error instead of overriding them silently. lockmw fills
// in [Read] when it is initialised; this package does not import lockmw.
package lockmwopts

// Settings are what a list of lockmw options sets.
type Settings struct {
	// LockOptions are the lockcore options given with
	// lockmw.WithLockOptions, a []lockcore.Option (read them with
	// lockcoreopts.Read).
	LockOptions any
	// SafetyMargin is true when lockmw.WithSafetyMargin was given.
	SafetyMargin bool
	// MaxInlineBytes is what lockmw.Answers.MaxInlineBytes was set to, 0
	// when it was not.
	MaxInlineBytes int
}

// Read returns what opts, a []lockmw.Option, set. lockmw sets it in its
// init; opts of another type read as nothing set.
var Read func(opts any) Settings
