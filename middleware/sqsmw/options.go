package sqsmw

import (
	"time"

	"github.com/herdlock/herdlock/middleware/lockmw"
)

// Defaults of [Wrap]'s options.
const (
	// DefaultConcurrency is how many keys of a batch are tried at once.
	DefaultConcurrency = 10
	// DefaultMinKeyTime is the least time a key attempt is given to hold
	// its lock.
	DefaultMinKeyTime = 3 * time.Second
	// DefaultBatchMargin is the time the batch keeps back from the
	// invocation's deadline, once for all its keys: lockmw's default
	// safety margin.
	DefaultBatchMargin = lockmw.DefaultSafetyMargin
)

// Option configures [Wrap].
type Option func(*options)

type options struct {
	concurrency int
	minKeyTime  time.Duration
	margin      time.Duration
	lockOpts    []lockmw.Option
}

// WithConcurrency sets how many keys of a batch are tried at once.
// Default [DefaultConcurrency]; values below 1 are 1.
func WithConcurrency(n int) Option {
	return func(o *options) { o.concurrency = max(n, 1) }
}

// WithMinKeyTime sets the least time a key attempt is given to hold its
// lock when the batch's time is shared out: a share shorter than that is
// raised to it. Default [DefaultMinKeyTime]. A key that cannot get it
// before the batch's end (the deadline less the batch margin) is not
// tried: its records are reported failed, no lock is asked for, and no
// failure is published for the key; one warning a batch says how many.
func WithMinKeyTime(d time.Duration) Option {
	return func(o *options) { o.minKeyTime = max(d, 0) }
}

// WithBatchMargin sets the time the batch keeps back from the invocation's
// deadline, once for all its keys: key attempts hold their locks, and wait,
// until the deadline less this margin at the latest; their releases may
// use three quarters of it, and the batch answers by the deadline less a
// quarter of it, reporting every record not finished by then as failed.
// It is also the safety margin of each key's lockmw, after the end of the
// key's share: a lockmw.WithSafetyMargin given to [WithLockmw] is
// overridden. Default [DefaultBatchMargin].
func WithBatchMargin(d time.Duration) Option {
	return func(o *options) { o.margin = max(d, 0) }
}

// WithLockmw passes options to the lockmw middleware of the key attempts
// (metrics, logger, tracer, lock group, lock options). They come after
// sqsmw's own defaults, lockmw.WithPanicAsError(), which makes a
// panicking handler fail its key's records instead of the whole batch,
// and a lockcore.WithMaxHold of 15 min, Lambda's longest timeout, so that
// a key holds for its whole share (a shorter one of yours ends the hold,
// and the handler's context, before the share's end),
// and before lockmw.WithSafetyMargin set to the batch margin
// ([WithBatchMargin]). The logger also writes sqsmw's own lines. Default:
// none.
func WithLockmw(opts ...lockmw.Option) Option {
	return func(o *options) { o.lockOpts = append(o.lockOpts, opts...) }
}

func buildOptions(opts []Option) options {
	o := options{concurrency: DefaultConcurrency, minKeyTime: DefaultMinKeyTime, margin: DefaultBatchMargin}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	return o
}
