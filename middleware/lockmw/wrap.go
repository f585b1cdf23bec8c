package lockmw

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/herdlock/herdlock/emf"
	"github.com/herdlock/herdlock/lockcore"
)

// Wrap returns h wrapped in a lock, in the shape that lambda.Start accepts:
//
//	lambda.Start(lockmw.Wrap(fetchAndStore, lockmw.WithStore(store), lockmw.WithKey(keyOf)))
//
// Each invocation takes the lock id from the event and calls
// [lockcore.Lock.TryAcquireElseWaitForRelease], holding and waiting at most
// until the context's deadline minus the safety margin. Then:
//
//   - ACQUIRED (also after a take-over): h runs with the lock's holder
//     context, which is cancelled, with a cause that [context.Cause]
//     returns, when the lease is lost (lockcore.ErrLeaseLost) or the maximum
//     hold is reached (lockcore.ErrMaxHoldReached). The lock is released
//     before Wrap's handler returns, publishing success (with the
//     [WithResultRef] reference) when h returns a nil error and failure
//     otherwise. If h panics, the lock is released as failure and the panic
//     continues.
//   - RELEASED: the [WithOnReleased] handler runs, or h when there is none.
//   - FAILED: the [WithOnFailed] fallback runs, or the invocation returns an
//     error matching [ErrLockFailed].
//
// The handler finds the outcome, fence and revision with [FromContext].
// Each invocation flushes its metrics once, logs its outcome, and, when
// tracing is on, records X-Ray subsegments.
//
// Wrap never panics on a bad configuration: it logs the error once and the
// returned handler returns it, matching [ErrConfig], on every call. Use
// [New] to get the error instead. The returned handler is safe for
// concurrent use.
func Wrap[TIn, TOut any](h func(context.Context, TIn) (TOut, error), opts ...Option) func(context.Context, TIn) (TOut, error) {
	f, err := New(h, opts...)
	if err == nil {
		return f
	}
	var o options
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	log := o.logger
	if log == nil {
		log = defaultLogger()
	}
	var once sync.Once
	return func(ctx context.Context, _ TIn) (TOut, error) {
		once.Do(func() {
			log.ErrorContext(ctx, "lockmw: invalid configuration; every invocation fails", slog.Any("error", err))
		})
		var zero TOut
		return zero, err
	}
}

// New is [Wrap], but returns the configuration error, which matches
// [ErrConfig] and names every problem found, instead of a handler that
// returns it.
func New[TIn, TOut any](h func(context.Context, TIn) (TOut, error), opts ...Option) (func(context.Context, TIn) (TOut, error), error) {
	w, err := newWrapper(h, opts)
	if err != nil {
		return nil, err
	}
	return w.invoke, nil
}

// wrapper is one wrapped handler: its configuration, read-only after
// newWrapper.
type wrapper[TIn, TOut any] struct {
	h          func(context.Context, TIn) (TOut, error)
	key        func(context.Context, TIn) (string, error) // nil: staticKey
	staticKey  string
	onReleased func(context.Context, TIn) (TOut, error)
	onFailed   func(context.Context, TIn, error) (TOut, error)
	resultRef  func(TOut) string

	store      lockcore.Store
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
	tracing   bool
}

func newWrapper[TIn, TOut any](h func(context.Context, TIn) (TOut, error), opts []Option) (*wrapper[TIn, TOut], error) {
	o := options{margin: DefaultSafetyMargin}
	var errs []error
	for i, opt := range opts {
		if opt == nil {
			errs = append(errs, fmt.Errorf("option %d is nil", i))
			continue
		}
		opt(&o)
	}
	if h == nil {
		errs = append(errs, errors.New("nil handler"))
	}
	if err := o.check(); err != nil {
		errs = append(errs, err)
	}
	w := &wrapper[TIn, TOut]{
		h:          h,
		staticKey:  strings.TrimSpace(o.staticKey),
		store:      o.store,
		group:      o.group,
		accountID:  o.accountID,
		appID:      o.appID,
		accountSet: o.accountSet,
		owner:      o.owner,
		margin:     o.margin,
		lockOpts:   o.lockOpts,
		metrics:    o.metrics,
		coldStart:  o.coldStart,
		log:        o.logger,
		tracing:    inLambda(),
	}
	var in TIn
	var out TOut
	if o.key != nil {
		f, ok := o.key.(func(context.Context, TIn) (string, error))
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("WithKey: %T does not take the handler's event type %s", o.key, typeName(&in)))
		case f == nil:
			errs = append(errs, errors.New("WithKey: nil function"))
		}
		w.key = f
	}
	if o.onReleased != nil {
		f, ok := o.onReleased.(func(context.Context, TIn) (TOut, error))
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("WithOnReleased: %T is not func(context.Context, %s) (%s, error)", o.onReleased, typeName(&in), typeName(&out)))
		case f == nil:
			errs = append(errs, errors.New("WithOnReleased: nil function"))
		}
		w.onReleased = f
	}
	if o.onFailed != nil {
		f, ok := o.onFailed.(func(context.Context, TIn, error) (TOut, error))
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("WithOnFailed: %T is not func(context.Context, %s, error) (%s, error)", o.onFailed, typeName(&in), typeName(&out)))
		case f == nil:
			errs = append(errs, errors.New("WithOnFailed: nil function"))
		}
		w.onFailed = f
	}
	if o.resultRef != nil {
		f, ok := o.resultRef.(func(TOut) string)
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("WithResultRef: %T does not take the handler's result type %s", o.resultRef, typeName(&out)))
		case f == nil:
			errs = append(errs, errors.New("WithResultRef: nil function"))
		}
		w.resultRef = f
	}
	if !o.groupSet {
		w.group = lambdacontext.FunctionName
		if w.group == "" {
			w.group = os.Getenv(envFunctionName)
		}
		if w.group == "" {
			w.group = DefaultLockGroup
		}
	}
	if w.owner == nil {
		w.owner = defaultOwner
	}
	if o.tracingSet {
		w.tracing = o.tracing
	}
	// The lock options are checked once here, not on every invocation.
	probe := append(append([]lockcore.Option(nil), w.lockOpts...), lockcore.WithLogger(slog.New(slog.DiscardHandler)))
	if _, err := lockcore.New(lockcore.NewMemoryStore(), lockcore.Params{
		LockID: "probe", LockGroup: "probe", OwnerName: "probe", AccountID: 1, AppID: 1,
	}, probe...); err != nil {
		errs = append(errs, fmt.Errorf("WithLockOptions: %w", err))
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%w: %w", ErrConfig, errors.Join(errs...))
	}
	if w.metrics == nil {
		mw := o.metricsW
		if mw == nil {
			mw = os.Stdout
		}
		m, err := newDefaultMetrics(mw)
		if err != nil {
			return nil, fmt.Errorf("%w: metrics: %w", ErrConfig, err)
		}
		w.metrics = m
	}
	if w.log == nil {
		w.log = defaultLogger()
	}
	xrayLog.CompareAndSwap(nil, w.log)
	return w, nil
}

// typeName names the type that p points to, without reflection.
func typeName[T any](p *T) string {
	return strings.TrimPrefix(fmt.Sprintf("%T", p), "*")
}
