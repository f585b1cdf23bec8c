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
	"github.com/herdlock/herdlock/internal/lockcoreopts"
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

	group    string
	holder   Holder // Name set; zero ids: the default record account
	margin   time.Duration
	lockOpts []lockcore.Option
	lockSet  lockcoreopts.Settings // the logger, metrics and release timeout lockOpts set

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
	if err := checkLockOptions(o.lockOpts, o.margin); err != nil {
		errs = append(errs, err)
	}
	if hs.OnReleased != nil && (o.answers.MaxInlineBytes != 0 || o.answers.Store != nil) {
		errs = append(errs, errors.New("WithAnswers is for inline answers, which a read handler (OnReleased) replaces: give one of them"))
	}
	if o.tableCheck && lockcore.CheckStore(store) == nil {
		log := o.tel.Logger
		if log == nil {
			log = defaultLogger()
		}
		if err := checkTable(store, log); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%w: %w", errConfig, errors.Join(errs...))
	}
	w := &wrapper[TIn, TOut]{hs: hs, store: store, key: key}
	if err := w.apply(&o); err != nil {
		return nil, fmt.Errorf("%w: %w", errConfig, err)
	}
	return w, nil
}

// collect applies opts over the defaults; a nil option is an error.
func collect(opts []Option) (options, []error) {
	o := options{margin: DefaultSafetyMargin}
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
// invocation, by building a lock on a memory store; and that a release
// timeout they set ends before the deadline, within the safety margin.
func checkLockOptions(opts []lockcore.Option, margin time.Duration) error {
	if rt := lockcoreopts.Read(opts).ReleaseTimeout; rt > 0 && rt >= margin {
		return fmt.Errorf("WithLockOptions: lockcore.StoreCalls.ReleaseTimeout %v is not less than the safety margin %v (WithSafetyMargin): the release would run past the deadline", rt, margin)
	}
	if at := lockcoreopts.Read(opts).AutoReleaseTimeout; at > 0 && at >= margin {
		return fmt.Errorf("WithLockOptions: lockcore.StoreCalls.AutoReleaseTimeout %v is not less than the safety margin %v (WithSafetyMargin): the release at the maximum hold would run past the deadline", at, margin)
	}
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
	w.holder = o.holder
	if w.holder.Name == nil {
		w.holder.Name = defaultOwner
	}
	w.margin = o.margin
	w.maxAnswer = o.answers.MaxInlineBytes
	if w.maxAnswer == 0 {
		w.maxAnswer = defaultMaxAnswerBytes
	}
	w.answers = o.answers.Store
	if w.hs.OnReleased == nil {
		w.codec = w.hs.Codec
		if w.codec == nil {
			w.codec = JSONCodec[TOut]{}
		}
	}
	w.lockOpts = o.lockOpts
	w.lockSet = lockcoreopts.Read(o.lockOpts)
	if w.lockSet.Logger != nil {
		w.lockSet.Logger = redacting(w.lockSet.Logger) // as the middleware's own
	}
	w.coldStart = o.tel.ColdStartMetric
	w.tracer = o.tel.Tracer
	w.panicAsError = o.panicAsError
	if !o.noCoalesce {
		w.co = newCoalescer()
	}
	w.log = o.tel.Logger
	if w.log == nil {
		w.log = defaultLogger()
	}
	w.log = redacting(w.log) // no AWS API error's message in a log line
	warnFilteredMetrics(w.log, os.Getenv)
	w.metrics = o.tel.EMF
	if w.metrics != nil {
		return nil
	}
	mw := o.tel.EMFWriter
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
// defaultLockGroup.
func defaultGroup() string {
	if g := lambdacontext.FunctionName; g != "" {
		return g
	}
	if g := os.Getenv(envFunctionName); g != "" {
		return g
	}
	return defaultLockGroup
}
