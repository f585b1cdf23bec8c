package sqsmw

import (
	"errors"
	"fmt"
	"time"

	"github.com/herdlock/herdlock/internal/lockmwopts"
	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/middleware/lockmw"
)

// Defaults of [BatchTime]; docs/configuration.md states them, and a test
// ties the two.
const (
	// defaultConcurrency is how many keys of a batch are tried at once.
	defaultConcurrency = 10
	// defaultMinKeyTime is the least time a key attempt is given to hold
	// its lock.
	defaultMinKeyTime = 3 * time.Second
	// defaultBatchMargin is the time the batch keeps back from the
	// invocation's deadline, once for all its keys: lockmw's default
	// safety margin.
	defaultBatchMargin = lockmw.DefaultSafetyMargin
)

// Option configures [New].
type Option func(*options)

type options struct {
	concurrency int
	minKeyTime  time.Duration
	margin      time.Duration
	lockOpts    []lockmw.Option
	errs        []error // the options' bad values
}

// BatchTime is how a batch shares its time among its keys, given with
// [WithBatchTime]. A zero field keeps its default; a negative one is a
// configuration error.
type BatchTime struct {
	// Concurrency is how many keys of a batch are tried at once.
	// Default 10.
	Concurrency int

	// MinKeyTime is the least time a key attempt is given to hold its
	// lock when the batch's time is shared out: a share shorter than that
	// is raised to it. A key that cannot get it before the batch's end
	// (the deadline less the margin) is not tried: its records are
	// reported failed, no lock is asked for, and no failure is published
	// for the key; one warning a batch says how many. Default 3 s.
	MinKeyTime time.Duration

	// Margin is the time the batch keeps back from the invocation's
	// deadline, once for all its keys: key attempts hold their locks, and
	// wait, until the deadline less this margin at the latest; their
	// releases may use three quarters of it (also a key whose handler
	// returns early: lockcore.StoreCalls.ReleaseTimeout, which
	// lockmw.WithLockOptions may set lower), and the batch answers by the
	// deadline less a quarter of it, reporting every record not finished
	// by then as failed. It is also the safety margin of each key's
	// lockmw, after the end of the key's share: a lockmw.WithSafetyMargin
	// given to [WithLockmwOptions] is a configuration error. Default 2 s (lockmw's
	// default safety margin, lockmw.DefaultSafetyMargin).
	Margin time.Duration
}

// WithBatchTime sets how a batch shares its time among its keys (see
// [BatchTime]). Default: BatchTime{} (10 keys at once, at least 3 s each,
// a 2 s margin).
func WithBatchTime(b BatchTime) Option {
	return func(o *options) {
		if b.Concurrency < 0 || b.MinKeyTime < 0 || b.Margin < 0 {
			o.errs = append(o.errs, fmt.Errorf("WithBatchTime: negative value in %+v", b))
			return
		}
		if b.Concurrency > 0 {
			o.concurrency = b.Concurrency
		}
		if b.MinKeyTime > 0 {
			o.minKeyTime = b.MinKeyTime
		}
		if b.Margin > 0 {
			o.margin = b.Margin
		}
	}
}

// WithLockmwOptions passes options to the lockmw middleware of the key
// attempts (metrics, logger, tracer, lock group, lock options). They come
// after sqsmw's own defaults, lockmw.WithPanicAsError(), which makes
// a panicking handler fail its key's records instead of the whole batch,
// and a lockcore.WithMaxHold of 15 min, Lambda's longest timeout, so that
// a key holds for its whole share (a shorter one of yours ends the hold,
// and the handler's context, before the share's end), and before
// lockmw.WithSafetyMargin set to the batch margin ([BatchTime]); a
// lockmw.WithSafetyMargin among them is a configuration error. The
// logger also writes sqsmw's own lines. Default: none.
func WithLockmwOptions(opts ...lockmw.Option) Option {
	return func(o *options) { o.lockOpts = append(o.lockOpts, opts...) }
}

// buildOptions applies opts over the defaults; an error matches
// lockcore.ErrConfig and names every bad value.
func buildOptions(opts []Option) (options, error) {
	o := options{concurrency: defaultConcurrency, minKeyTime: defaultMinKeyTime, margin: defaultBatchMargin}
	for i, opt := range opts {
		if opt == nil {
			o.errs = append(o.errs, fmt.Errorf("option %d is nil", i))
			continue
		}
		opt(&o)
	}
	if lockmwopts.Read(o.lockOpts).SafetyMargin {
		o.errs = append(o.errs, errors.New("WithLockmwOptions: lockmw.WithSafetyMargin is the batch's: set BatchTime.Margin (WithBatchTime) instead"))
	}
	if len(o.errs) > 0 {
		return o, fmt.Errorf("sqsmw: %w: %w", lockcore.ErrConfig, errors.Join(o.errs...))
	}
	return o, nil
}
