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

// defaultLockGroup is the lock group when [WithLockGroup] is not given and
// AWS_LAMBDA_FUNCTION_NAME is not set.
const defaultLockGroup = "herdlock"

// defaultNamespace is the CloudWatch namespace of the default metrics when
// POWERTOOLS_METRICS_NAMESPACE is not set.
const defaultNamespace = "herdlock"

// Option configures [Wrap], [WrapHandlers], [New] and [NewHandlers] with a
// setting that does not depend on the handler's types, so options can be
// collected in one slice and shared between handlers. What does depend on
// them (the key function, the read and failure handlers, the result
// reference, the codec) is positional or in [Handlers], where the compiler
// checks it. The options that take a struct ([WithTelemetry],
// [WithAnswers], [WithHolder]) may be given more than once: each sets the
// fields it does not leave zero, and a zero field keeps the default or what
// an earlier one set.
type Option func(*options)

type options struct {
	group    string
	groupSet bool
	holder   Holder
	margin   time.Duration
	lockOpts []lockcore.Option
	tel      Telemetry
	answers  Answers

	panicAsError bool
	noCoalesce   bool
	tableCheck   bool
}

// WithLockGroup sets the lock group, the kind of resource the lock ids name.
// Default: the AWS_LAMBDA_FUNCTION_NAME environment variable, else
// "herdlock".
func WithLockGroup(group string) Option {
	return func(o *options) { o.group, o.groupSet = group, true }
}

// localAccountID is the record account outside Lambda (see [Holder]).
const localAccountID = 1

// Holder is how the lock item records its holder (see [WithHolder]). A
// zero field keeps its default.
type Holder struct {
	// Name names the holder on the lock item, for diagnostics only:
	// ownership is decided by the revision. Default: the log stream name
	// and the request id from the Lambda context
	// ("2026/11/30/[$LATEST]abc.../c6af9ac6-..."), and hostname:pid
	// outside Lambda. A blank name it returns also gets the default.
	Name func(ctx context.Context) string

	// AccountID and AppID are the record account written on the lock item
	// ("act:{AccountID}/app:{AppID}", for accounting; not part of the
	// key). They must not be negative. Default: the account of the invoked
	// function ARN in the Lambda context, and application 1; outside
	// Lambda (no function ARN in the context, as in a test or a local
	// run) account 1. An invocation whose function ARN has no account
	// returns a configuration error (matching lockcore.ErrConfig).
	AccountID int64
	AppID     int64
}

// WithHolder sets how the lock item records its holder: its name and its
// record account (see [Holder]). Default: the zero Holder, every field's
// default.
func WithHolder(h Holder) Option {
	return func(o *options) {
		if h.Name != nil {
			o.holder.Name = h.Name
		}
		if h.AccountID != 0 {
			o.holder.AccountID = h.AccountID
		}
		if h.AppID != 0 {
			o.holder.AppID = h.AppID
		}
	}
}

// WithSafetyMargin sets the time kept back from the invocation's deadline.
// Default [DefaultSafetyMargin]. It must not be negative. The lock is held
// and waited for until the deadline minus the margin; releasing the lock
// may use the margin up to its last quarter, which is left for the metrics
// flush. An invocation that starts with less time left than the margin
// returns an error matching lockcore.ErrNoTimeLeft without running the
// handler.
func WithSafetyMargin(d time.Duration) Option {
	return func(o *options) { o.margin = d }
}

// WithLockOptions passes options to every [lockcore.New]: lease, poll
// interval, maximum wait and so on. Default: lockcore's defaults, except a
// fresh-success window of [DefaultFreshSuccess]. The maximum hold and
// wait are further capped by the invocation's deadline. Of the settings
// the middleware sets itself, those given here are honoured:
// lockcore.WithLogger gets the lock's lines (with the request id, and the
// messages of AWS API errors withheld as in the middleware's) instead of
// the middleware's logger; lockcore.WithMetrics gets the lock's
// measurements as well as the invocation's metrics document; and
// lockcore.StoreCalls.ReleaseTimeout (in lockcore.WithStoreCalls) bounds
// both the holder's release (by default a lease, so that a slow table
// still gets the publication) and the release the lock makes by itself at
// the maximum hold (by default three quarters of the safety margin), and
// AutoReleaseTimeout only the latter. Each must be less than the margin (a
// configuration error otherwise). The holder's release also ends by the
// deadline less a quarter of the margin, the metrics flush's.
func WithLockOptions(opts ...lockcore.Option) Option {
	return func(o *options) { o.lockOpts = append(o.lockOpts, opts...) }
}

// Telemetry is where an invocation's logs, metrics and spans go (see
// [WithTelemetry]). A zero field keeps its default.
type Telemetry struct {
	// Logger is the middleware's logger. Default: inside Lambda
	// (AWS_LAMBDA_FUNCTION_NAME set), JSON on stderr; elsewhere
	// github.com/lmittmann/tint on stderr when it is a terminal, plain
	// text on stderr otherwise. Its level is the first set of
	// AWS_LAMBDA_LOG_LEVEL, POWERTOOLS_LOG_LEVEL and LOG_LEVEL (INFO when
	// none is), and it writes the levels slog.LevelDebug-4 and
	// slog.LevelError+4 as TRACE and FATAL. Whatever the logger, New and
	// Wrap log one warning when AWS_LAMBDA_LOG_LEVEL is above INFO,
	// because Lambda then drops the metric lines.
	Logger *slog.Logger

	// EMF is where the invocation's metrics go; the middleware flushes it
	// once per invocation, so metrics the handler adds to it go out in the
	// same flush. Default: an [emf.Metrics] writing to os.Stdout (or
	// EMFWriter), with the namespace and service from
	// POWERTOOLS_METRICS_NAMESPACE and POWERTOOLS_SERVICE_NAME, else
	// "herdlock" and the function name. Not together with EMFWriter.
	EMF *emf.Metrics

	// EMFWriter makes the default metrics write to it instead of
	// os.Stdout, such as io.Discard in a test. Not together with EMF.
	EMFWriter io.Writer

	// ColdStartMetric records the ColdStart metric, the way Powertools
	// does, in the first invocation of the process. Default: off.
	ColdStartMetric bool

	// Tracer records the spans of each invocation: "herdlock", and under
	// it "lock.acquire", "lock.wait" and "lock.release" (see [Tracer]).
	// Package xraytracer records them as X-Ray subsegments, package
	// oteltracer as OpenTelemetry spans; [MultiTracer] combines tracers.
	// Default: none, no spans.
	Tracer Tracer
}

// WithTelemetry sets where an invocation's logs, metrics and spans go (see
// [Telemetry]). Default: the zero Telemetry, every field's default.
func WithTelemetry(t Telemetry) Option {
	return func(o *options) {
		if t.Logger != nil {
			o.tel.Logger = t.Logger
		}
		if t.EMF != nil {
			o.tel.EMF = t.EMF
		}
		if t.EMFWriter != nil {
			o.tel.EMFWriter = t.EMFWriter
		}
		if t.ColdStartMetric {
			o.tel.ColdStartMetric = true
		}
		if t.Tracer != nil {
			o.tel.Tracer = t.Tracer
		}
	}
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
		log.Warn("lockmw: the table check got no answer; the table is not checked", slog.String("error_code", ErrorReason(err)))
	}
	return nil
}

// check reports the errors of the settings.
func (o *options) check() error {
	var errs []error
	if o.groupSet && isBlank(o.group) {
		errs = append(errs, errors.New("WithLockGroup: blank group"))
	}
	if o.holder.AccountID < 0 || o.holder.AppID < 0 {
		errs = append(errs, fmt.Errorf("WithHolder: negative record account, AccountID %d, AppID %d", o.holder.AccountID, o.holder.AppID))
	}
	if o.margin < 0 {
		errs = append(errs, fmt.Errorf("WithSafetyMargin: negative duration %v", o.margin))
	}
	if o.tel.EMF != nil && o.tel.EMFWriter != nil {
		errs = append(errs, errors.New("WithTelemetry: EMF and EMFWriter are exclusive"))
	}
	if n := o.answers.MaxInlineBytes; n < 0 || n > maxInlineAnswer {
		errs = append(errs, fmt.Errorf("WithAnswers: MaxInlineBytes %d is not between 1 and %d", n, maxInlineAnswer))
	}
	return errors.Join(errs...)
}

func isBlank(s string) bool { return strings.TrimSpace(s) == "" }
