package sqsmw

import (
	"time"

	"github.com/herdlock/herdlock/middleware/lockmw"
)

// Defaults of [Wrap]'s options.
const (
	// DefaultConcurrency is how many keys of a batch are tried at once.
	DefaultConcurrency = 10
	// DefaultMinKeyTime is the least time a key attempt is given.
	DefaultMinKeyTime = 3 * time.Second
	// DefaultBatchMargin is how long before the invocation's deadline the
	// batch answers, whatever is not finished.
	DefaultBatchMargin = 500 * time.Millisecond
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

// WithMinKeyTime sets the least time a key attempt is given when the
// batch's time is shared out; it must cover lockmw's safety margin
// (lockmw.DefaultSafetyMargin) and the handler. Default
// [DefaultMinKeyTime]. Keys that cannot get it before the batch's end are
// reported failed.
func WithMinKeyTime(d time.Duration) Option {
	return func(o *options) { o.minKeyTime = max(d, 0) }
}

// WithBatchMargin sets how long before the invocation's deadline the batch
// answers, reporting every record not finished by then as failed. Default
// [DefaultBatchMargin].
func WithBatchMargin(d time.Duration) Option {
	return func(o *options) { o.margin = max(d, 0) }
}

// WithLockmw passes options to the lockmw middleware of the key attempts
// (metrics, logger, tracer, lock group, lock options). They come after
// sqsmw's own default, lockmw.WithPanicAsError(true), which makes a
// panicking handler fail its key's records instead of the whole batch.
// Default: none.
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
