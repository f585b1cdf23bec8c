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
	"github.com/herdlock/herdlock/lockcore/storeapi"
)

// DefaultSafetyMargin is the time [Wrap] keeps back from the invocation's
// deadline: the lock is held, and waited for, until the deadline minus this
// margin, which then covers releasing the lock, flushing the metrics, and,
// for a waiter, reading the stored result and replying. Change it with
// [WithSafetyMargin].
const DefaultSafetyMargin = 2 * time.Second

// DefaultFreshSuccess is how long after a holder published success a new
// invocation of the same key reads that result instead of acquiring the
// lock and fetching again (lockcore.WithFreshSuccess), unless
// [WithLockOptions] sets another window. It covers the tail of one burst:
// invocations whose first request lands after the holder released, which
// would otherwise each fetch again. Set it to how long a fetched result
// stays fresh (the example sets its cache TTL); WithFreshSuccess(0) turns
// it off.
const DefaultFreshSuccess = 10 * time.Second

// DefaultLockGroup is the lock group when [WithLockGroup] is not given and
// AWS_LAMBDA_FUNCTION_NAME is not set.
const DefaultLockGroup = "herdlock"

// DefaultNamespace is the CloudWatch namespace of the default metrics when
// POWERTOOLS_METRICS_NAMESPACE is not set.
const DefaultNamespace = "herdlock"

// Option configures [Wrap], [WrapHandlers], [New] and [NewHandlers] with a
// setting that does not depend on the handler's types, so options can be
// collected in one slice and shared between handlers. What does depend on
// them (the key function, the read and failure handlers, the result
// reference, the codec) is positional or in [Handlers], where the compiler
// checks it.
type Option func(*options)

type options struct {
	group       string
	groupSet    bool
	accountID   int64
	appID       int64
	accountSet  bool
	owner       func(context.Context) string
	ownerSet    bool
	margin      time.Duration
	lockOpts    []lockcore.Option
	metrics     *emf.Metrics
	metricsSet  bool
	metricsW    io.Writer
	metricsWSet bool
	coldStart   bool
	logger      *slog.Logger
	loggerSet   bool
	tracer      Tracer

	panicAsError bool
	noCoalesce   bool
	maxAnswer    int
	tableCheck   bool
	answers      AnswerStore
	answersSet   bool
}

// WithLockGroup sets the lock group, the kind of resource the lock ids name.
// Default: the AWS_LAMBDA_FUNCTION_NAME environment variable, else
// [DefaultLockGroup].
func WithLockGroup(group string) Option {
	return func(o *options) { o.group, o.groupSet = group, true }
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
// interval, maximum wait and so on. Default: lockcore's defaults, except a
// fresh-success window of [DefaultFreshSuccess]. The
// middleware adds its own lockcore.WithLogger, lockcore.WithMetrics and
// lockcore.StoreCalls.ReleaseTimeout after them, so those three given here have
// no effect (use [WithLogger], [WithMetrics] and [WithSafetyMargin]); the
// maximum hold and wait are further capped by the invocation's deadline.
func WithLockOptions(opts ...lockcore.Option) Option {
	return func(o *options) { o.lockOpts = append(o.lockOpts, opts...) }
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
// (AWS_LAMBDA_FUNCTION_NAME set), JSON on stderr; elsewhere
// github.com/lmittmann/tint on stderr when it is a terminal, plain text on
// stderr otherwise. Its level is the first set of AWS_LAMBDA_LOG_LEVEL,
// POWERTOOLS_LOG_LEVEL and LOG_LEVEL (INFO when none is), and it writes
// [LevelTrace] and [LevelFatal] as TRACE and FATAL. Whatever the logger,
// New and Wrap log one warning when AWS_LAMBDA_LOG_LEVEL is above INFO,
// because Lambda then drops the metric lines.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) { o.logger, o.loggerSet = l, true }
}

// WithTracer records the spans of each invocation with t: "herdlock", and
// under it "lock.acquire", "lock.wait" and "lock.release" (see [Tracer]).
// Package xraytracer records them as X-Ray subsegments, package oteltracer
// as OpenTelemetry spans; [MultiTracer] combines tracers. Default: none,
// no spans; a nil t is the same.
func WithTracer(t Tracer) Option {
	return func(o *options) { o.tracer = t }
}

// WithMaxAnswerBytes sets the largest answer that a holder publishes inline
// (see [Handlers].OnReleased), as stored in the lock item: encoded,
// compressed when that is smaller, plus one format byte. Default
// [DefaultMaxAnswerBytes]; at most lockcore.MaxAnswerBytes. A larger answer
// goes by reference to the [WithAnswerStore] store; without one it is not
// published: the holder releases with success and the reference only,
// says so in its log line at Error level, and waiters without a read
// handler get an error matching [ErrNoAnswer].
func WithMaxAnswerBytes(n int) Option {
	return func(o *options) { o.maxAnswer = n }
}

// WithTableCheck makes [New], [NewHandlers], [Wrap] and [WrapHandlers]
// check the store's table once, when they are called (at initialisation,
// outside the handler): it exists, has the lock's key schema, and its TTL
// deletes by storeapi.AttrTTL (see lockcore.DynamoStore.CheckTable). A
// failed check is a configuration error naming what is wrong, so a
// function deployed against a missing or wrong table fails at once with
// it (New returns it; Wrap's handler returns it on every invocation)
// rather than on its first lock call. The store must have a
// CheckTable(context.Context) error method, as *lockcore.DynamoStore does;
// the check allows itself 5 s, and the role needs dynamodb:DescribeTable
// and dynamodb:DescribeTimeToLive. A check the store did not answer (a
// throttle, a 5xx, no answer within the 5 s) says nothing about the table:
// it is logged as a warning with the error's code and fails nothing.
// Default: off, no such calls.
func WithTableCheck() Option {
	return func(o *options) { o.tableCheck = true }
}

// tableCheckTimeout bounds WithTableCheck's calls.
const tableCheckTimeout = 5 * time.Second

// tableChecker is a store that can check its table (see WithTableCheck).
type tableChecker interface {
	CheckTable(ctx context.Context) error
}

// checkTable runs WithTableCheck's check on store. Only a definite answer
// is an error: a table found unfit (lockcore.ErrConfig) or a refused
// request (lockcore.ErrStoreRefused); any other error of the check is
// logged on log and ignored.
func checkTable(store storeapi.Store, log *slog.Logger) error {
	tc, ok := store.(tableChecker)
	if !ok {
		return fmt.Errorf("WithTableCheck: the store (%T) has no CheckTable method", store)
	}
	ctx, cancel := context.WithTimeout(context.Background(), tableCheckTimeout)
	defer cancel()
	err := tc.CheckTable(ctx)
	switch {
	case err == nil:
	case errors.Is(err, lockcore.ErrConfig), errors.Is(err, lockcore.ErrStoreRefused):
		return fmt.Errorf("WithTableCheck: %w", err)
	default:
		log.Warn("lockmw: the table check got no answer; the table is not checked", slog.String("error_code", ErrorCode(err)))
	}
	return nil
}

// check reports the errors of the settings.
func (o *options) check() error {
	var errs []error
	if o.groupSet && isBlank(o.group) {
		errs = append(errs, errors.New("WithLockGroup: blank group"))
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
	if o.maxAnswer < 1 || o.maxAnswer > maxInlineAnswer {
		errs = append(errs, fmt.Errorf("WithMaxAnswerBytes: %d is not between 1 and %d", o.maxAnswer, maxInlineAnswer))
	}
	if o.answersSet && o.answers == nil {
		errs = append(errs, errors.New("WithAnswerStore: nil store"))
	}
	if o.loggerSet && o.logger == nil {
		errs = append(errs, errors.New("WithLogger: nil logger"))
	}
	return errors.Join(errs...)
}

func isBlank(s string) bool { return strings.TrimSpace(s) == "" }
