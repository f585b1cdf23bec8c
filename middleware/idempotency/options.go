package idempotency

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/herdlock/herdlock/middleware/lockmw"
)

// Defaults and bounds of the options.
const (
	// DefaultExpiresAfter is how long a completed answer is replayed when
	// [WithExpiresAfter] is not given: one hour, as in Powertools.
	DefaultExpiresAfter = time.Hour
	// MaxExpiresAfter is the longest [WithExpiresAfter].
	MaxExpiresAfter = 30 * 24 * time.Hour
	// MaxKeptErrors is the longest [WithKeptErrors]: lockmw reads a longer
	// not-before as an hour.
	MaxKeptErrors = time.Hour
	// DefaultKeyPrefix is the key prefix when [WithKeyPrefix] is not given.
	DefaultKeyPrefix = "idempotency"
	// MaxKeyBytes is the longest Idempotency-Key header value [WrapHTTP]
	// accepts, as Stripe's. A key function's key may be up to 1 KiB.
	MaxKeyBytes = 255
)

// Option configures [Wrap] and [New]. Options are read once, into the
// wrapped handler's own configuration: two handlers built from one slice
// of options share nothing that either can change.
type Option func(*options)

type options struct {
	prefix       string
	partition    string
	partitionSet bool
	optionalKey  bool
	expiresAfter time.Duration
	keptErrors   time.Duration
	cache        *Cache
	cacheSet     bool
	lockmwOpts   []lockmw.Option
}

// WithKeyPrefix sets the prefix of the records' lock ids, "prefix#key":
// the name of the operation, so that two operations on one store and
// partition never answer each other's keys. Default [DefaultKeyPrefix].
// It must not be blank nor contain '#'.
func WithKeyPrefix(prefix string) Option {
	return func(o *options) { o.prefix = prefix }
}

// WithPartition sets the static partition of the records: the lock group
// (lockmw.WithLockGroup), the first part of every record's DynamoDB key.
// Default: lockmw's lock group, the AWS_LAMBDA_FUNCTION_NAME environment
// variable, else "herdlock". It must not be blank.
func WithPartition(partition string) Option {
	return func(o *options) { o.partition, o.partitionSet = partition, true }
}

// WithOptionalKey makes an event without an idempotency key (the key
// function returned "") run the handler without idempotency, as
// Powertools' raise_on_no_idempotency_key=False does; [FromContext] then
// reports no key. Default: such an event fails with an error matching
// [ErrKey].
func WithOptionalKey() Option {
	return func(o *options) { o.optionalKey = true }
}

// WithExpiresAfter sets how long after a holder completed its answer is
// replayed to an invocation with the same key. Default
// [DefaultExpiresAfter]; at least a second and at most [MaxExpiresAfter].
// The expiry is checked in the store's condition, in milliseconds
// (lockcore.WithFreshSuccess): DynamoDB's TTL, set a day after it, only
// deletes old records.
func WithExpiresAfter(d time.Duration) Option {
	return func(o *options) { o.expiresAfter = d }
}

// WithKeptErrors keeps a handler error for d: until then an invocation
// with the same key does not run the handler, and returns an error
// matching lockcore.ErrHolderFailed that carries the reason code and the
// not-before (when its deadline is earlier than the not-before), or waits
// for the not-before and runs. Default 0: errors are not kept, the next
// invocation with the key runs the handler (lockcore's failure policy
// still holds back a key whose attempts failed lockcore.DefaultMaxAttempts
// times in a row, for the failure window). At most [MaxKeptErrors].
func WithKeptErrors(d time.Duration) Option {
	return func(o *options) { o.keptErrors = d }
}

// WithCache keeps completed, validated answers in c, in the process, so
// that a duplicate that this process answered before is replayed without
// a request to the store. Default: no cache. One cache may serve many
// operations; each has entries of its own, never replayed by another.
func WithCache(c *Cache) Option {
	return func(o *options) { o.cache, o.cacheSet = c, true }
}

// WithLockmw passes options to the lockmw middleware that runs the
// records' locks: safety margin, logger, metrics, tracer, record account,
// lock options, the answer store of answers over what a record holds
// (lockmw.WithAnswers). The retention, the TTL, the largest answer and the lock
// group are the idempotency layer's: lockcore.WithFreshSuccess,
// lockcore.WithTTL, lockmw.Answers.MaxInlineBytes and lockmw.WithLockGroup
// given here are overridden (by [WithExpiresAfter], a day past it,
// lockcore.MaxAnswerBytes and [WithPartition]). A duplicate's wait is
// bounded by its deadline, and by lockcore.WithMaxWait only when given
// here (the layer's default is 15 minutes, Lambda's longest invocation,
// instead of lockcore.DefaultMaxWait). Default: none.
func WithLockmw(opts ...lockmw.Option) Option {
	return func(o *options) { o.lockmwOpts = append(o.lockmwOpts, opts...) }
}

// collect applies opts over the defaults and reports their errors.
func collect(opts []Option) (options, error) {
	o := options{prefix: DefaultKeyPrefix, expiresAfter: DefaultExpiresAfter}
	var errs []error
	for i, opt := range opts {
		if opt == nil {
			errs = append(errs, fmt.Errorf("option %d is nil", i))
			continue
		}
		opt(&o)
	}
	if strings.TrimSpace(o.prefix) == "" || strings.Contains(o.prefix, "#") {
		errs = append(errs, fmt.Errorf("WithKeyPrefix: %q is blank or contains '#'", o.prefix))
	}
	if o.partitionSet && strings.TrimSpace(o.partition) == "" {
		errs = append(errs, errors.New("WithPartition: blank partition"))
	}
	if o.expiresAfter < time.Second || o.expiresAfter > MaxExpiresAfter {
		errs = append(errs, fmt.Errorf("WithExpiresAfter: %v is not between 1s and %v (a time.Duration: 3600 is 3.6µs, not an hour)", o.expiresAfter, MaxExpiresAfter))
	}
	if o.keptErrors < 0 || o.keptErrors > MaxKeptErrors {
		errs = append(errs, fmt.Errorf("WithKeptErrors: %v is not between 0 and %v", o.keptErrors, MaxKeptErrors))
	}
	if o.cacheSet && o.cache == nil {
		errs = append(errs, errors.New("WithCache: nil cache"))
	}
	for i, opt := range o.lockmwOpts {
		if opt == nil {
			errs = append(errs, fmt.Errorf("WithLockmw: option %d is nil", i))
		}
	}
	if len(errs) > 0 {
		return o, fmt.Errorf("%w: %w", ErrConfig, errors.Join(errs...))
	}
	o.lockmwOpts = append([]lockmw.Option(nil), o.lockmwOpts...) // our own copy
	return o, nil
}
