package lockmw

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/herdlock/herdlock/emf"
	"github.com/herdlock/herdlock/lockcore"
)

// DefaultSafetyMargin is the time [Wrap] keeps back from the invocation's
// deadline: the lock is held, and waited for, until the deadline minus this
// margin, which then covers releasing the lock, flushing the metrics, and,
// for a waiter, reading the stored result and replying. Change it with
// [WithSafetyMargin].
const DefaultSafetyMargin = 2 * time.Second

// DefaultLockGroup is the lock group when [WithLockGroup] is not given and
// AWS_LAMBDA_FUNCTION_NAME is not set.
const DefaultLockGroup = "herdlock"

// DefaultNamespace is the CloudWatch namespace of the default metrics when
// POWERTOOLS_METRICS_NAMESPACE is not set.
const DefaultNamespace = "herdlock"

// Option configures [Wrap] and [New]. Options are not generic, so they can
// be collected in one slice; those that carry functions of the event or
// result type ([WithKey], [WithOnReleased], [WithOnFailed], [WithResultRef])
// are checked against the handler's types when the handler is wrapped.
type Option func(*options)

type options struct {
	store       lockcore.Store
	storeSet    bool
	group       string
	groupSet    bool
	key         any // func(context.Context, TIn) (string, error)
	staticKey   string
	keySet      int // how many of WithKey and WithStaticKey were given
	accountID   int64
	appID       int64
	accountSet  bool
	owner       func(context.Context) string
	ownerSet    bool
	margin      time.Duration
	lockOpts    []lockcore.Option
	onReleased  any // func(context.Context, TIn) (TOut, error)
	onFailed    any // func(context.Context, TIn, error) (TOut, error)
	resultRef   any // func(TOut) string
	metrics     *emf.Metrics
	metricsSet  bool
	metricsW    io.Writer
	metricsWSet bool
	coldStart   bool
	logger      *slog.Logger
	loggerSet   bool
	tracing     bool
	tracingSet  bool
}

// WithStore sets the store that holds the locks, such as a
// [lockcore.DynamoStore]. It is required: there is no default.
func WithStore(s lockcore.Store) Option {
	return func(o *options) { o.store, o.storeSet = s, true }
}

// WithLockGroup sets the lock group, the kind of resource the lock ids name.
// Default: the AWS_LAMBDA_FUNCTION_NAME environment variable, else
// [DefaultLockGroup].
func WithLockGroup(group string) Option {
	return func(o *options) { o.group, o.groupSet = group, true }
}

// WithKey sets the function that takes the lock id from the event. When it
// fails, or returns a blank id, the invocation returns an error matching
// [ErrKey] and the handler does not run. TIn must be the handler's event
// type. Exactly one of WithKey and [WithStaticKey] is required.
func WithKey[TIn any](f func(ctx context.Context, event TIn) (string, error)) Option {
	return func(o *options) {
		o.key = f
		o.keySet++
	}
}

// WithStaticKey sets one lock id for every invocation. Exactly one of
// [WithKey] and WithStaticKey is required.
func WithStaticKey(id string) Option {
	return func(o *options) {
		o.staticKey = id
		o.keySet++
	}
}

// WithRecordAccount sets the account and application ids stored on the lock
// item. Default: the account id from the invoked function ARN in the
// Lambda context, and application id 1; an invocation with neither returns
// an error matching [ErrNoAccount].
func WithRecordAccount(accountID, appID int64) Option {
	return func(o *options) { o.accountID, o.appID, o.accountSet = accountID, appID, true }
}

// WithOwnerName sets the function that names the holder on the lock item,
// for diagnostics only: ownership is decided by the revision. Default: the
// log stream name and the request id from the Lambda context
// ("2026/11/30/[$LATEST]abc.../c6af9ac6-..."), and hostname:pid outside
// Lambda.
func WithOwnerName(f func(ctx context.Context) string) Option {
	return func(o *options) { o.owner, o.ownerSet = f, true }
}

// WithSafetyMargin sets the time kept back from the invocation's deadline.
// Default [DefaultSafetyMargin]. It must not be negative. The lock is held
// and waited for until the deadline minus the margin; releasing the lock
// may use the margin up to its last quarter, which is left for the metrics
// flush. An invocation that starts with less time left than the margin
// returns an error matching [ErrNoTimeLeft] without running the handler.
func WithSafetyMargin(d time.Duration) Option {
	return func(o *options) { o.margin = d }
}

// WithLockOptions passes options to every [lockcore.New]: lease, poll
// interval, maximum wait and so on. Default: lockcore's defaults. The
// middleware adds its own logger and metrics after them, and the maximum
// hold and wait are further capped by the invocation's deadline.
func WithLockOptions(opts ...lockcore.Option) Option {
	return func(o *options) { o.lockOpts = append(o.lockOpts, opts...) }
}

// WithOnReleased sets the "read" handler that runs instead of the main
// handler when the outcome is RELEASED: another invocation fetched and
// published success, so this one reads what was stored. Its context carries
// the [Info] (with the publishing holder's fence and result reference).
// TIn and TOut must be the handler's types. Default: the main handler runs
// for RELEASED too and branches on FromContext(ctx).Outcome.
func WithOnReleased[TIn, TOut any](f func(ctx context.Context, event TIn) (TOut, error)) Option {
	return func(o *options) { o.onReleased = f }
}

// WithOnFailed sets the fallback that runs when the outcome is FAILED: the
// lock was neither acquired nor released in time, or the store failed. err
// matches [ErrLockFailed] and says why. TIn and TOut must be the handler's
// types. Default: the invocation returns that error.
func WithOnFailed[TIn, TOut any](f func(ctx context.Context, event TIn, err error) (TOut, error)) Option {
	return func(o *options) { o.onFailed = f }
}

// WithResultRef sets the function that turns a successful handler result
// into the reference published with the release, which waiters find in
// [Info].ResultRef (a cache key, an S3 URI). TOut must be the handler's
// result type. Default: the empty reference.
func WithResultRef[TOut any](f func(result TOut) string) Option {
	return func(o *options) { o.resultRef = f }
}

// WithMetrics sets where the invocation's metrics go; the middleware flushes
// m once per invocation, so metrics the handler adds to m go out in the
// same flush. Default: an [emf.Metrics] writing to os.Stdout, with the
// namespace and service from POWERTOOLS_METRICS_NAMESPACE and
// POWERTOOLS_SERVICE_NAME, else [DefaultNamespace] and the function name.
// Not together with [WithMetricsWriter].
func WithMetrics(m *emf.Metrics) Option {
	return func(o *options) { o.metrics, o.metricsSet = m, true }
}

// WithMetricsWriter makes the default metrics write to w instead of
// os.Stdout. Not together with [WithMetrics].
func WithMetricsWriter(w io.Writer) Option {
	return func(o *options) { o.metricsW, o.metricsWSet = w, true }
}

// WithColdStartMetric records the ColdStart metric, the way Powertools does,
// in the first invocation of the process. Default: off.
func WithColdStartMetric() Option {
	return func(o *options) { o.coldStart = true }
}

// WithLogger sets the logger. Default: inside Lambda
// (AWS_LAMBDA_FUNCTION_NAME set), JSON on stderr at the level of
// AWS_LAMBDA_LOG_LEVEL (INFO when unset); elsewhere
// github.com/lmittmann/tint on stderr when it is a terminal, plain text on
// stderr otherwise.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) { o.logger, o.loggerSet = l, true }
}

// WithTracing turns the X-Ray subsegments for acquire, wait and release on
// or off. Default: on inside Lambda (AWS_LAMBDA_FUNCTION_NAME set), off
// elsewhere. Even when on, an invocation whose context carries neither a
// segment nor a trace header is not traced.
func WithTracing(on bool) Option {
	return func(o *options) { o.tracing, o.tracingSet = on, true }
}

// check reports the errors of settings that do not depend on the handler's
// types.
func (o *options) check() error {
	var errs []error
	if !o.storeSet || o.store == nil {
		errs = append(errs, errors.New("WithStore is required"))
	}
	if o.groupSet && isBlank(o.group) {
		errs = append(errs, errors.New("WithLockGroup: blank group"))
	}
	switch {
	case o.keySet == 0:
		errs = append(errs, errors.New("one of WithKey and WithStaticKey is required"))
	case o.keySet > 1:
		errs = append(errs, errors.New("WithKey and WithStaticKey: give exactly one, once"))
	case o.key == nil && isBlank(o.staticKey):
		errs = append(errs, errors.New("WithStaticKey: blank id"))
	}
	if o.accountSet && (o.accountID <= 0 || o.appID <= 0) {
		errs = append(errs, fmt.Errorf("WithRecordAccount: ids must be positive, got %d and %d", o.accountID, o.appID))
	}
	if o.ownerSet && o.owner == nil {
		errs = append(errs, errors.New("WithOwnerName: nil function"))
	}
	if o.margin < 0 {
		errs = append(errs, fmt.Errorf("WithSafetyMargin: negative duration %v", o.margin))
	}
	if o.metricsSet && o.metrics == nil {
		errs = append(errs, errors.New("WithMetrics: nil metrics"))
	}
	if o.metricsWSet && o.metricsW == nil {
		errs = append(errs, errors.New("WithMetricsWriter: nil writer"))
	}
	if o.metricsSet && o.metricsWSet {
		errs = append(errs, errors.New("WithMetrics and WithMetricsWriter are exclusive"))
	}
	if o.loggerSet && o.logger == nil {
		errs = append(errs, errors.New("WithLogger: nil logger"))
	}
	return errors.Join(errs...)
}

func isBlank(s string) bool { return strings.TrimSpace(s) == "" }
