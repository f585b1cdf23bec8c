package httpmw

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/herdlock/herdlock/internal/lockcoreopts"
	"github.com/herdlock/herdlock/internal/lockmwopts"
	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/middleware/lockmw"
)

// Option configures the adapters ([NewREST], [NewHTTPAPI],
// [NewFunctionURL], [NewALB]).
type Option func(*options)

type options struct {
	codec       BodyCodec
	fresh       time.Duration
	freshSet    bool // WithFreshSuccess was given
	integration time.Duration
	lockOpts    []lockmw.Option
	errs        []error // the options' bad values
}

// defaultIntegrationTimeout is API Gateway's default integration timeout
// for REST and HTTP APIs ("Amazon API Gateway quotas": 50 ms to 29 s),
// the limit [WithIntegrationTimeout] sets when not given.
const defaultIntegrationTimeout = 29 * time.Second

// waitMargin is how long before the integration timeout a waiter answers:
// the time between API Gateway's request and the invocation's start, and
// the answer's way back.
const waitMargin = 2 * time.Second

// WithCodec sets how the handler's body is encoded and its Content-Type.
// Default: encoding/json, as application/json. A nil codec keeps the
// default.
func WithCodec(c BodyCodec) Option {
	return func(o *options) {
		if c != nil {
			o.codec = c
		}
	}
}

// WithFreshSuccess sets the lock's fresh-success window to d, as
// lockcore.WithFreshSuccess(d) does, so that a request arriving less than
// d after the holder's success is answered from the lock item, and makes
// every 200 answer carry Cache-Control: max-age=N, N being the whole
// seconds left of d since the holder's handler returned (no header when
// less than a second is left), or no-store when the request has content
// (a key in a GET's body), which no cache keys an answer on. Default: no
// Cache-Control, and lockmw's own fresh-success window (10 s,
// lockmw.DefaultFreshSuccess). A d of 0 turns both off; a negative d, or
// a lockcore.WithFreshSuccess also given with [WithLockmwOptions] (whose
// window the header would not follow), is a configuration error.
func WithFreshSuccess(d time.Duration) Option {
	return func(o *options) {
		if d < 0 {
			o.errs = append(o.errs, fmt.Errorf("WithFreshSuccess: negative window %v", d))
		}
		o.fresh, o.freshSet = max(d, 0), true
	}
}

// WithLockmwOptions passes options to the lockmw middleware under the
// adapter: metrics, logger, tracer, lock group, lock options. Default:
// none.
func WithLockmwOptions(opts ...lockmw.Option) Option {
	return func(o *options) { o.lockOpts = append(o.lockOpts, opts...) }
}

// WithIntegrationTimeout sets the integration timeout of the API Gateway
// REST or HTTP API in front of [NewREST] and [NewHTTPAPI]: a request
// that waits for the key's holder answers (503 with Retry-After) 2 s
// before it (at half of it when d is 4 s or less), so that the client
// gets that answer and not API Gateway's own 504 (it sets
// lockcore.WithMaxWait, which options given with [WithLockmwOptions] may
// override), and the holder's release ends by then too, so that a slow
// table does not hold the holder's own answer past it. The holder's
// handler is not cut short: its answer still serves the key's later
// requests. Default 29 s, API Gateway's default;
// a d of 0 leaves the wait as the lock's options set it, a negative d is
// a configuration error. Function URLs and ALB targets have no limit
// below the function's timeout: [NewFunctionURL] and [NewALB] ignore it.
func WithIntegrationTimeout(d time.Duration) Option {
	return func(o *options) {
		if d < 0 {
			o.errs = append(o.errs, fmt.Errorf("WithIntegrationTimeout: negative timeout %v", d))
		}
		o.integration = max(d, 0)
	}
}

// isThrottleReason reports whether a failure reason names a throttle,
// answered 429 instead of 503: it contains "throttl", "rate_limit" or
// "too_many", as "upstream_throttled" does.
func isThrottleReason(reason string) bool {
	return strings.Contains(reason, "throttl") || strings.Contains(reason, "rate_limit") ||
		strings.Contains(reason, "too_many")
}

// buildOptions applies opts over the defaults; an error matches
// lockcore.ErrConfig and names every bad value.
func buildOptions(opts []Option) (options, error) {
	o := options{codec: jsonCodec{}, integration: defaultIntegrationTimeout}
	for i, opt := range opts {
		if opt == nil {
			o.errs = append(o.errs, fmt.Errorf("option %d is nil", i))
			continue
		}
		opt(&o)
	}
	if o.freshSet && lockcoreopts.Read(lockmwopts.Read(o.lockOpts).LockOptions).FreshSuccess {
		o.errs = append(o.errs, errors.New("WithLockmwOptions: lockcore.WithFreshSuccess besides WithFreshSuccess, whose window and Cache-Control would disagree: give one"))
	}
	if len(o.errs) > 0 {
		return o, fmt.Errorf("httpmw: %w: %w", lockcore.ErrConfig, errors.Join(o.errs...))
	}
	return o, nil
}

// configError is err, a configuration error of the middleware under the
// adapter, made to match lockcore.ErrConfig.
func configError(err error) error {
	if errors.Is(err, lockcore.ErrConfig) {
		return err
	}
	return fmt.Errorf("httpmw: %w: %w", lockcore.ErrConfig, err)
}

// lockmwOptions are the options of the middleware: a panic is an error
// (answered 500), the freshness window, the wait bounded by the
// integration timeout behind API Gateway (gateway), then the user's.
func (o *options) lockmwOptions(gateway bool) []lockmw.Option {
	opts := []lockmw.Option{lockmw.WithPanicAsError()}
	if o.freshSet {
		opts = append(opts, lockmw.WithLockOptions(lockcore.WithFreshSuccess(o.fresh)))
	}
	if gateway && o.integration > 0 {
		opts = append(opts, lockmw.WithLockOptions(lockcore.WithMaxWait(o.integration-min(waitMargin, o.integration/2))))
	}
	return append(opts, o.lockOpts...)
}
