package httpmw

import (
	"strings"
	"time"

	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/middleware/lockmw"
)

// Option configures the adapters ([WrapREST], [WrapHTTPAPI],
// [WrapFunctionURL], [WrapALB]).
type Option func(*options)

type options struct {
	codec     Codec
	fresh     time.Duration
	throttled func(reason string) bool
	lockOpts  []lockmw.Option
}

// WithCodec sets how the handler's body is encoded and its Content-Type.
// Default: [JSONCodec]. A nil codec keeps the default.
func WithCodec(c Codec) Option {
	return func(o *options) {
		if c != nil {
			o.codec = c
		}
	}
}

// WithFreshness makes a published success fresh for d: it sets the
// lock's fresh-success window (lockcore.WithFreshSuccess(d)), so that a
// request arriving less than d after the holder's success is answered
// from the lock item, and every 200 answer carries Cache-Control:
// max-age=N, N being the whole seconds left of d since the holder's
// handler returned (no header when less than a second is left). Default:
// no Cache-Control, and lockmw's own fresh-success window
// (lockmw.DefaultFreshSuccess). A d of 0 or less turns both off. Options
// given with [WithLockmw] come after it, so a lockcore.WithFreshSuccess
// there overrides the window but not the header.
func WithFreshness(d time.Duration) Option {
	return func(o *options) { o.fresh = max(d, 0) }
}

// WithThrottleReason sets which failure reasons (the reason code of a
// shared failure, lockcore.HolderFailedError.Reason, or the FailureCode of
// the holder's own error) are throttles, answered 429 instead of 503.
// Default: [IsThrottleReason]. A nil function keeps the default.
func WithThrottleReason(f func(reason string) bool) Option {
	return func(o *options) {
		if f != nil {
			o.throttled = f
		}
	}
}

// WithLockmw passes options to the lockmw middleware under the adapter:
// metrics, logger, tracer, lock group, lock options. Default: none.
func WithLockmw(opts ...lockmw.Option) Option {
	return func(o *options) { o.lockOpts = append(o.lockOpts, opts...) }
}

// IsThrottleReason reports whether a failure reason code names a
// throttle: it contains "throttl", "rate_limit" or "too_many", as
// "upstream_throttled" does.
func IsThrottleReason(reason string) bool {
	return strings.Contains(reason, "throttl") || strings.Contains(reason, "rate_limit") ||
		strings.Contains(reason, "too_many")
}

// buildOptions applies opts over the defaults.
func buildOptions(opts []Option) options {
	o := options{codec: JSONCodec{}, throttled: IsThrottleReason}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	return o
}

// lockmwOptions are the options of the middleware: the freshness window,
// then the user's.
func (o *options) lockmwOptions() []lockmw.Option {
	var opts []lockmw.Option
	if o.fresh > 0 {
		opts = append(opts, lockmw.WithLockOptions(lockcore.WithFreshSuccess(o.fresh)))
	}
	return append(opts, o.lockOpts...)
}
