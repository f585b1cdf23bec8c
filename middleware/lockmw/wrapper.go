package lockmw

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/herdlock/herdlock/emf"
	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/lockcore/storeapi"
)

// wrapper is one wrapped handler: its configuration, read-only after
// newWrapper.
type wrapper[TIn, TOut any] struct {
	hs        Handlers[TIn, TOut]
	store     storeapi.Store
	key       func(context.Context, TIn) (string, error)
	codec     Codec[TOut] // nil: a read handler, no inline answers
	maxAnswer int
	answers   AnswerStore // nil: no answers by reference

	group      string
	accountID  int64
	appID      int64
	accountSet bool
	owner      func(context.Context) string
	margin     time.Duration
	lockOpts   []lockcore.Option

	metrics   *emf.Metrics
	coldStart bool
	coldOnce  sync.Once
	log       *slog.Logger
	tracer    Tracer // nil: no spans

	panicAsError bool
	co           *coalescer // nil: every invocation tries the lock itself
}

// newWrapper checks the configuration and fills in the defaults.
func newWrapper[TIn, TOut any](hs Handlers[TIn, TOut], store storeapi.Store,
	key func(context.Context, TIn) (string, error), opts []Option) (*wrapper[TIn, TOut], error) {
	o, errs := collect(opts)
	errs = append(errs, checkRequired(&hs, store, key)...)
	if err := o.check(); err != nil {
		errs = append(errs, err)
	}
	if err := checkLockOptions(o.lockOpts); err != nil {
		errs = append(errs, err)
	}
	if o.tableCheck && lockcore.CheckStore(store) == nil {
		log := o.logger
		if log == nil {
			log = defaultLogger()
		}
		if err := checkTable(store, log); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%w: %w", ErrConfig, errors.Join(errs...))
	}
	w := &wrapper[TIn, TOut]{hs: hs, store: store, key: key}
	if err := w.apply(&o); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return w, nil
}

// collect applies opts over the defaults; a nil option is an error.
func collect(opts []Option) (options, []error) {
	o := options{margin: DefaultSafetyMargin, maxAnswer: DefaultMaxAnswerBytes}
	var errs []error
	for i, opt := range opts {
		if opt == nil {
			errs = append(errs, fmt.Errorf("option %d is nil", i))
			continue
		}
		opt(&o)
	}
	return o, errs
}

// checkRequired reports the missing required things.
func checkRequired[TIn, TOut any](hs *Handlers[TIn, TOut], store storeapi.Store,
	key func(context.Context, TIn) (string, error)) []error {
	var errs []error
	if err := hs.check(); err != nil {
		errs = append(errs, err)
	}
	if err := lockcore.CheckStore(store); err != nil {
		errs = append(errs, fmt.Errorf("nil store: %w", err))
	}
	if key == nil {
		errs = append(errs, errors.New("nil key function"))
	}
	return errs
}

// checkLockOptions checks the lock options once here, not on every
// invocation, by building a lock on a memory store.
func checkLockOptions(opts []lockcore.Option) error {
	probe := append(append([]lockcore.Option(nil), opts...), lockcore.WithLogger(slog.New(slog.DiscardHandler)))
	if _, err := lockcore.New(lockcore.NewMemoryStore(), lockcore.Params{
		LockID: "probe", LockGroup: "probe", HolderName: "probe", AccountID: 1, AppID: 1,
	}, probe...); err != nil {
		return fmt.Errorf("WithLockOptions: %w", err)
	}
	return nil
}

// apply copies the checked options into w, with the defaults of those not
// given.
func (w *wrapper[TIn, TOut]) apply(o *options) error {
	w.group = o.group
	if !o.groupSet {
		w.group = defaultGroup()
	}
	w.accountID, w.appID, w.accountSet = o.accountID, o.appID, o.accountSet
	w.owner = o.owner
	if w.owner == nil {
		w.owner = defaultOwner
	}
	w.margin = o.margin
	w.maxAnswer = o.maxAnswer
	w.answers = o.answers
	if w.hs.OnReleased == nil {
		w.codec = w.hs.Codec
		if w.codec == nil {
			w.codec = JSONCodec[TOut]{}
		}
	}
	w.lockOpts = o.lockOpts
	w.coldStart = o.coldStart
	w.tracer = o.tracer
	w.panicAsError = o.panicAsError
	if !o.noCoalesce {
		w.co = newCoalescer()
	}
	w.log = o.logger
	if w.log == nil {
		w.log = defaultLogger()
	}
	w.log = redacting(w.log) // no AWS API error's message in a log line
	warnFilteredMetrics(w.log, os.Getenv)
	w.metrics = o.metrics
	if w.metrics != nil {
		return nil
	}
	mw := o.metricsW
	if mw == nil {
		mw = os.Stdout
	}
	m, err := newDefaultMetrics(mw)
	if err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	w.metrics = m
	return nil
}

// defaultGroup is [WithLockGroup]'s default: the function name, else
// DefaultLockGroup.
func defaultGroup() string {
	if g := lambdacontext.FunctionName; g != "" {
		return g
	}
	if g := os.Getenv(envFunctionName); g != "" {
		return g
	}
	return DefaultLockGroup
}
