package idempotency

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/herdlock/herdlock/internal/lockcoreopts"
	"github.com/herdlock/herdlock/internal/lockmwopts"
	"github.com/herdlock/herdlock/middleware/lockmw"
)

// Defaults and bounds of the options; docs/configuration.md states them,
// and a test ties the two.
const (
	// defaultExpiresAfter is how long a completed answer is replayed when
	// [Retention] does not say: one hour, as in Powertools.
	defaultExpiresAfter = time.Hour
	// maxExpiresAfter is the longest [Retention].Answers.
	maxExpiresAfter = 30 * 24 * time.Hour
	// maxKeptErrors is the longest [Retention].Errors: lockmw reads a
	// longer not-before as an hour.
	maxKeptErrors = time.Hour
	// defaultKeyPrefix is the key prefix when [Keys] gives none.
	defaultKeyPrefix = "idempotency"
	// maxKeyBytes is the longest Idempotency-Key header value [WrapHTTP]
	// accepts, as Stripe's. A key function's key may be up to 1 KiB.
	maxKeyBytes = 255
)

// Option configures [Wrap], [New], [WrapHTTP] and [SQSHandler]. Options
// are read once, into the wrapped handler's own configuration: two
// handlers built from one slice of options share nothing that either can
// change.
type Option func(*options)

type options struct {
	prefix       string
	optionalKey  bool
	expiresAfter time.Duration
	keptErrors   time.Duration
	cache        *Cache
	cacheSet     bool
	lockmwOpts   []lockmw.Option
	errs         []error // the options' bad values
}

// Keys is how the records are keyed, given with [WithKeys].
type Keys struct {
	// Prefix is the operation's name, the prefix of the records' lock
	// ids, "prefix#key", so that two operations on one store and lock
	// group never answer each other's keys. It must not contain '#' nor
	// have white space around it.
	// Default (""): "idempotency".
	Prefix string

	// Optional makes an event without an idempotency key (the key
	// function returned "", a request without the header) run the handler
	// without idempotency, as Powertools' raise_on_no_idempotency_key=False
	// does; [FromContext] then reports no key. Default (false): such an
	// event fails with an error matching lockmw.ErrKey.
	Optional bool
}

// WithKeys sets how the records are keyed (see [Keys]). Default: Keys{}
// (the prefix "idempotency", a key required). A zero field changes
// nothing, so that repeated uses merge.
func WithKeys(k Keys) Option {
	return func(o *options) {
		if k.Prefix != "" {
			// lockmw trims the lock id: " charge" would name the records of "charge".
			if t := strings.TrimSpace(k.Prefix); t == "" || t != k.Prefix || strings.Contains(k.Prefix, "#") {
				o.errs = append(o.errs, fmt.Errorf("WithKeys: prefix %q is blank, has white space around it or contains '#'", k.Prefix))
			}
			o.prefix = k.Prefix
		}
		if k.Optional {
			o.optionalKey = true
		}
	}
}

// Retention is how long the records answer, given with [WithRetention].
// A zero field keeps its default (repeated uses merge); a negative one is
// a configuration error.
type Retention struct {
	// Answers is how long after a holder completed its answer is replayed
	// to an invocation with the same key. Default 1 h; at least a second
	// and at most 30 days. The expiry is checked in the store's
	// condition, in milliseconds (lockcore.WithFreshSuccess): DynamoDB's
	// TTL, set a day after it, only deletes old records.
	Answers time.Duration

	// Errors keeps a handler error for that long: until then an
	// invocation with the same key does not run the handler, and returns
	// an error matching lockcore.ErrHolderFailed that carries the reason
	// and the not-before (when its deadline is earlier than the
	// not-before), or waits for the not-before and runs. Default 0:
	// errors are not kept, the next invocation with the key runs the
	// handler (lockcore's failure policy still holds back a key whose
	// attempts failed lockcore.DefaultMaxAttempts times in a row, for the
	// failure window). At most 1 h.
	Errors time.Duration
}

// WithRetention sets how long the records answer (see [Retention]).
// Default: Retention{} (answers for 1 h, errors not kept).
func WithRetention(r Retention) Option {
	return func(o *options) {
		if r.Answers != 0 {
			o.expiresAfter = r.Answers
		}
		if r.Errors != 0 {
			o.keptErrors = r.Errors
		}
	}
}

// WithCache keeps completed, validated answers in c, in the process, so
// that a duplicate that this process answered before is replayed without
// a request to the store. Default: no cache. One cache may serve many
// operations; each has entries of its own, never replayed by another.
func WithCache(c *Cache) Option {
	return func(o *options) { o.cache, o.cacheSet = c, true }
}

// WithLockmwOptions passes options to the lockmw middleware that runs the
// records' locks: lock group, safety margin, logger, metrics, tracer,
// record account, lock options, the answer store of answers over what a
// record holds (lockmw.WithAnswers). The retention, the TTL and the
// largest answer are the idempotency layer's ([Retention].Answers, a day
// past it, and lockcore.MaxAnswerBytes): a lockcore.WithFreshSuccess,
// lockcore.WithTTL or lockmw.Answers.MaxInlineBytes given here is a
// configuration error. The lock group (lockmw.WithLockGroup) is the
// records' partition: default lockmw's, the AWS_LAMBDA_FUNCTION_NAME
// environment variable, else "herdlock". A duplicate's wait
// is bounded by its deadline, and by lockcore.WithMaxWait only when given
// here (the layer's default is 15 minutes, Lambda's longest invocation,
// instead of lockcore.DefaultMaxWait). Default: none.
func WithLockmwOptions(opts ...lockmw.Option) Option {
	return func(o *options) { o.lockmwOpts = append(o.lockmwOpts, opts...) }
}

// collect applies opts over the defaults and reports their errors.
func collect(opts []Option) (options, error) {
	o := options{prefix: defaultKeyPrefix, expiresAfter: defaultExpiresAfter}
	var errs []error
	for i, opt := range opts {
		if opt == nil {
			errs = append(errs, fmt.Errorf("option %d is nil", i))
			continue
		}
		opt(&o)
	}
	errs = append(errs, o.errs...)
	if o.expiresAfter < time.Second || o.expiresAfter > maxExpiresAfter {
		errs = append(errs, fmt.Errorf("WithRetention: answers' %v is not between 1s and %v (a time.Duration: 3600 is 3.6µs, not an hour)", o.expiresAfter, maxExpiresAfter))
	}
	if o.keptErrors < 0 || o.keptErrors > maxKeptErrors {
		errs = append(errs, fmt.Errorf("WithRetention: errors' %v is not between 0 and %v", o.keptErrors, maxKeptErrors))
	}
	if o.cacheSet && o.cache == nil {
		errs = append(errs, errors.New("WithCache: nil cache"))
	}
	for i, opt := range o.lockmwOpts {
		if opt == nil {
			errs = append(errs, fmt.Errorf("WithLockmwOptions: option %d is nil", i))
		}
	}
	mw := lockmwopts.Read(o.lockmwOpts)
	lc := lockcoreopts.Read(mw.LockOptions)
	if lc.FreshSuccess {
		errs = append(errs, errors.New("WithLockmwOptions: lockcore.WithFreshSuccess is the layer's: set Retention.Answers (WithRetention) instead"))
	}
	if lc.TTL {
		errs = append(errs, errors.New("WithLockmwOptions: lockcore.WithTTL is the layer's (a day past Retention.Answers)"))
	}
	if mw.MaxInlineBytes != 0 {
		errs = append(errs, errors.New("WithLockmwOptions: lockmw.Answers.MaxInlineBytes is the layer's (lockcore.MaxAnswerBytes); only Answers.Store may be given"))
	}
	if len(errs) > 0 {
		return o, fmt.Errorf("%w: %w", errConfig, errors.Join(errs...))
	}
	o.lockmwOpts = append([]lockmw.Option(nil), o.lockmwOpts...) // our own copy
	return o, nil
}
