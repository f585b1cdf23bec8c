package lockmw

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/herdlock/herdlock/lockcore"
)

// newLock builds the invocation's lock. Its errors (no key, no time left,
// no account, bad lock settings) mean the lock was not tried.
func (w *wrapper[TIn, TOut]) newLock(c *call, in TIn) (*lockcore.Lock, error) {
	id, err := w.lockID(c.tctx, in)
	if err != nil {
		return nil, err
	}
	c.setKey(lockcore.Key{Group: w.group, ID: id})
	if err := w.timeLeft(c); err != nil {
		return nil, err
	}
	acct, app, err := w.account(c.tctx)
	if err != nil {
		return nil, err
	}
	c.params = w.params(c, id, acct, app)
	lock, err := lockcore.New(w.store, c.params, w.lockOptions(c)...)
	if err != nil {
		return nil, fmt.Errorf("lockmw: %w", err)
	}
	return lock, nil
}

// setKey records the lock key in the info, the log and the trace.
func (c *call) setKey(key lockcore.Key) {
	c.info.Key = key
	c.log = withLazy(c.log, slog.String("lockGroup", key.Group), slog.String("lockId", logID(key.ID)))
	c.tr.setKey(key)
}

// maxLoggedID is how much of a lock id the log lines carry: an id comes
// from the client's request and may be 2 KiB long.
const maxLoggedID = 128

// logID is id as the log lines carry it: cut after maxLoggedID bytes, at
// a character boundary, with the full length noted.
func logID(id string) string {
	if len(id) <= maxLoggedID {
		return id
	}
	cut := maxLoggedID
	for cut > 0 && !utf8.RuneStart(id[cut]) {
		cut--
	}
	return id[:cut] + "…(" + strconv.Itoa(len(id)) + " bytes)"
}

// timeLeft fails when the deadline is closer than the safety margin.
func (w *wrapper[TIn, TOut]) timeLeft(c *call) error {
	if !c.hasDL {
		return nil
	}
	if left := time.Until(c.deadline); left <= w.margin {
		return fmt.Errorf("%w: %v left, safety margin %v", errNoTimeLeft, left.Round(time.Millisecond), w.margin)
	}
	return nil
}

// params are the lock's parameters for this invocation.
func (w *wrapper[TIn, TOut]) params(c *call, id string, acct, app int64) lockcore.Params {
	owner := strings.TrimSpace(w.holder.Name(c.tctx))
	if owner == "" {
		owner = defaultOwner(c.tctx)
	}
	p := lockcore.Params{LockID: id, LockGroup: w.group, HolderName: owner, AccountID: acct, AppID: app}
	if c.hasDL {
		// Hold and wait until the deadline minus the margin; lockcore ends
		// every store call of the wait by then too.
		deadline, margin := c.deadline, w.margin
		p.RemainingTime = func() time.Duration { return time.Until(deadline) - margin }
	}
	return p
}

// lockOptions are the middleware's default fresh-success window, the
// configured lock options (which may override it), and the invocation's
// logger, metrics and release budget, which honour those the configured
// options set: their logger gets the lock's lines (with the request id),
// their metrics get the lock's measurements as the invocation's document
// does, and their release timeout replaces the default budget.
func (w *wrapper[TIn, TOut]) lockOptions(c *call) []lockcore.Option {
	opts := make([]lockcore.Option, 0, len(w.lockOpts)+4)
	opts = append(opts, lockcore.WithFreshSuccess(DefaultFreshSuccess))
	opts = append(opts, w.lockOpts...)
	var rec lockcore.Metrics = c.rec
	if m := w.lockSet.Metrics; m != nil {
		rec = bothMetrics{c.rec, m}
	}
	// The release the lock makes by itself at the maximum hold (the
	// deadline less the margin) may use three quarters of the margin; the
	// rest is the metrics flush's. The holder's own release, when its
	// handler returns with time to spare, may take as long as a lease (a
	// table answering slowly still gets the publication, and a duplicate
	// after it does not run the handler again), and ends by the deadline
	// less a quarter of the margin (see call.release). A release timeout
	// given in the lock options bounds both.
	auto := max(w.margin*3/4, time.Millisecond)
	if at := w.lockSet.AutoReleaseTimeout; at > 0 {
		auto = at
	}
	lease := w.lockSet.Lease
	if lease <= 0 {
		lease = lockcore.DefaultLease
	}
	release := max(auto, lease)
	if rt := w.lockSet.ReleaseTimeout; rt > 0 {
		release = rt
		if w.lockSet.AutoReleaseTimeout <= 0 {
			auto = rt
		}
	}
	return append(opts, lockcore.WithLogger(c.lockLog), lockcore.WithMetrics(rec),
		lockcore.WithStoreCalls(lockcore.StoreCalls{ReleaseTimeout: release, AutoReleaseTimeout: auto}))
}

// bothMetrics records each of the lock's measurements in the invocation's
// document and in the metrics of a lockcore.WithMetrics in WithLockOptions.
type bothMetrics [2]lockcore.Metrics

func (b bothMetrics) AddMetric(name, unit string, value float64) {
	b[0].AddMetric(name, unit, value)
	b[1].AddMetric(name, unit, value)
}

// lockID takes the lock id from the event.
func (w *wrapper[TIn, TOut]) lockID(ctx context.Context, in TIn) (string, error) {
	id, err := w.key(ctx, in)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrKey, err)
	}
	id = strings.TrimSpace(id)
	if id == "" {
		return "", fmt.Errorf("%w: the key function returned a blank id", ErrKey)
	}
	return id, nil
}

// account returns the record account: configured, from the invoked
// function ARN in the Lambda context, or, with none there (outside
// Lambda), the local account.
func (w *wrapper[TIn, TOut]) account(ctx context.Context) (int64, int64, error) {
	app := w.holder.AppID
	if app == 0 {
		app = 1
	}
	if w.holder.AccountID != 0 {
		return w.holder.AccountID, app, nil
	}
	lc, ok := lambdacontext.FromContext(ctx)
	if !ok || lc.InvokedFunctionArn == "" {
		return localAccountID, app, nil
	}
	id, err := accountFromARN(lc.InvokedFunctionArn)
	if err != nil {
		return 0, 0, fmt.Errorf("%w: no record account (WithHolder): %w", errConfig, err)
	}
	return id, app, nil
}
