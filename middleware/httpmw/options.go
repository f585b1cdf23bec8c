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
	codec       Codec
	fresh       time.Duration
	throttled   func(reason string) bool
	integration time.Duration
	lockOpts    []lockmw.Option
}

// DefaultIntegrationTimeout is API Gateway's default integration timeout
// for REST and HTTP APIs ("Amazon API Gateway quotas": 50 ms to 29 s),
// the limit [WithIntegrationTimeout] sets when not given.
const DefaultIntegrationTimeout = 29 * time.Second

// waitMargin is how long before the integration timeout a waiter answers:
// the time between API Gateway's request and the invocation's start, and
// the answer's way back.
const waitMargin = 2 * time.Second

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
// handler returned (no header when less than a second is left), or
// no-store when the request has content (a key in a GET's body), which no
// cache keys an answer on. Default:
// no Cache-Control, and lockmw's own fresh-success window
// (lockmw.DefaultFreshSuccess). A d of 0 or less turns both off. Options
// given with [WithLockmw] come after it, so a lockcore.WithFreshSuccess
// there overrides the window but not the header.
func WithFreshness(d time.Duration) Option {
	return func(o *options) { o.fresh = max(d, 0) }
}

// WithThrottleReason sets which failure reasons (the reason code of a
// shared failure, lockcore.HolderFailedError.Reason, or the FailureReason of
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

// WithIntegrationTimeout sets the integration timeout of the API Gateway
// REST or HTTP API in front of [WrapREST] and [WrapHTTPAPI]: a request
// that waits for the key's holder answers (503 with Retry-After) 2 s
// before it (at half of it when d is 4 s or less), so that the client
// gets that answer and not API Gateway's own 504 (it sets
// lockcore.WithMaxWait, which options given with [WithLockmw] may
// override). The holder's handler is not cut short: its answer still
// serves the key's later requests. Default [DefaultIntegrationTimeout]; a
// d of 0 or less leaves the wait as the lock's options set it. Function
// URLs and ALB targets have no limit below the function's timeout:
// [WrapFunctionURL] and [WrapALB] ignore it.
func WithIntegrationTimeout(d time.Duration) Option {
	return func(o *options) { o.integration = d }
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
	o := options{codec: JSONCodec{}, throttled: IsThrottleReason, integration: DefaultIntegrationTimeout}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	return o
}

// lockmwOptions are the options of the middleware: a panic is an error
// (answered 500), the freshness window, the wait bounded by the
// integration timeout behind API Gateway (gateway), then the user's.
func (o *options) lockmwOptions(gateway bool) []lockmw.Option {
	opts := []lockmw.Option{lockmw.WithPanicAsError()}
	if o.fresh > 0 {
		opts = append(opts, lockmw.WithLockOptions(lockcore.WithFreshSuccess(o.fresh)))
	}
	if gateway && o.integration > 0 {
		opts = append(opts, lockmw.WithLockOptions(lockcore.WithMaxWait(o.integration-min(waitMargin, o.integration/2))))
	}
	return append(opts, o.lockOpts...)
}
