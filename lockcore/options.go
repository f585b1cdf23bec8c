package lockcore

import (
	"fmt"
	"log/slog"
	"time"
)

// Defaults for the options of [New]. A Lambda middleware normally overrides
// only the maximum hold, from the invocation's deadline.
const (
	// DefaultLease is how long a holder's lease lasts without renewal.
	DefaultLease = 6 * time.Second
	// DefaultMinLease is the shortest lease accepted; shorter ones are
	// raised to it with a warning.
	DefaultMinLease = time.Second
	// DefaultMaxHold is the hard maximum a lock may be held, renewals
	// included.
	DefaultMaxHold = 5 * time.Minute
	// DefaultRenewFloor is the shortest renewal interval: the lock renews
	// every max(floor, lease/3).
	DefaultRenewFloor = 500 * time.Millisecond
	// DefaultPollInterval is how often a waiter reads the lock item, before
	// ±20% jitter. It does not depend on the lease.
	DefaultPollInterval = 200 * time.Millisecond
	// DefaultMaxWait is how long TryAcquireElseWaitForRelease waits at most.
	DefaultMaxWait = 30 * time.Second
	// DefaultClockAllowance is ε, the bound assumed on any two hosts' wall
	// clock difference for the wall-clock fast path.
	DefaultClockAllowance = time.Second
	// DefaultDrift is ρ, the bound assumed on the rate difference of two
	// hosts' monotonic clocks for the clock-free path.
	DefaultDrift = 0.01
	// DefaultMaxAttempts is how many unpaced attempts (failures without
	// a not-before) a failure episode makes before it is held back: one
	// such failure is retried once, by one taker-over.
	DefaultMaxAttempts = 2
	// DefaultMaxHoldBack caps the hold-back of an exhausted failure
	// episode (see [WithMaxAttempts]).
	DefaultMaxHoldBack = 2 * time.Minute
	// DefaultReleaseAttempts is how many times Release tries.
	DefaultReleaseAttempts = 5
	// DefaultReleaseMaxBackoff caps the wait between release attempts.
	DefaultReleaseMaxBackoff = 2 * time.Second
	// DefaultReleaseTimeout bounds one release, all attempts included; the
	// context's deadline bounds it further.
	DefaultReleaseTimeout = 10 * time.Second
	// DefaultAttemptTimeout is the least time one attempt of a renewal, a
	// release or a poll may take (more when the store answers slowly, see
	// [WithAttemptTimeout]); the lock retries a renewal until its
	// validity ends and a release until its budget ends.
	DefaultAttemptTimeout = 500 * time.Millisecond
	// DefaultTTL is how long after acquisition the item's TTL attribute
	// lets DynamoDB delete an idle lock item. It is clean-up only: expiry
	// never depends on it.
	DefaultTTL = 7 * 24 * time.Hour
)

type options struct {
	lease             time.Duration
	minLease          time.Duration
	maxHold           time.Duration
	renewFloor        time.Duration
	pollInterval      time.Duration
	maxWait           time.Duration
	clockAllowance    time.Duration
	useWallClock      bool
	drift             float64
	maxAttempts       int
	maxHoldBack       time.Duration
	failureWindow     time.Duration // 0: the lease
	releaseAttempts   int
	releaseMaxBackoff time.Duration
	releaseTimeout    time.Duration
	ttl               time.Duration
	freshSuccess      time.Duration
	readFirst         bool
	hotKeys           *HotKeys
	hotKeysSet        bool // WithHotKeys was given: hotKeys replaces the store's
	announceShards    int
	attemptTimeout    time.Duration
	logger            *slog.Logger
	metrics           Metrics
	clock             Clock
}

func defaultOptions() options {
	return options{
		lease:             DefaultLease,
		minLease:          DefaultMinLease,
		maxHold:           DefaultMaxHold,
		renewFloor:        DefaultRenewFloor,
		pollInterval:      DefaultPollInterval,
		maxWait:           DefaultMaxWait,
		clockAllowance:    DefaultClockAllowance,
		useWallClock:      true,
		drift:             DefaultDrift,
		maxAttempts:       DefaultMaxAttempts,
		maxHoldBack:       DefaultMaxHoldBack,
		releaseAttempts:   DefaultReleaseAttempts,
		releaseMaxBackoff: DefaultReleaseMaxBackoff,
		releaseTimeout:    DefaultReleaseTimeout,
		ttl:               DefaultTTL,
		announceShards:    DefaultAnnounceShards,
		attemptTimeout:    DefaultAttemptTimeout,
		metrics:           noMetrics{},
		clock:             systemClock{},
	}
}

// Option configures a [Lock].
type Option func(*options)

// WithLease sets the lease length. Default [DefaultLease]; a lease below the
// minimum lease is raised to it, with a warning.
func WithLease(d time.Duration) Option { return func(o *options) { o.lease = d } }

// WithMinLease sets the shortest lease accepted. Default [DefaultMinLease].
func WithMinLease(d time.Duration) Option { return func(o *options) { o.minLease = d } }

// WithMaxHold sets the hard maximum hold. Default [DefaultMaxHold]. The
// effective maximum is also capped by Params.RemainingTime.
func WithMaxHold(d time.Duration) Option { return func(o *options) { o.maxHold = d } }

// WithRenewFloor sets the shortest renewal interval. Default
// [DefaultRenewFloor].
func WithRenewFloor(d time.Duration) Option { return func(o *options) { o.renewFloor = d } }

// WithPollInterval sets the waiters' poll interval, before ±20% jitter.
// Default [DefaultPollInterval]. Every waiter reads the item once per
// interval, whatever else waits: n waiters make about n/interval strongly
// consistent reads per second on the item.
func WithPollInterval(d time.Duration) Option { return func(o *options) { o.pollInterval = d } }

// WithMaxWait sets how long TryAcquireElseWaitForRelease waits at most.
// Default [DefaultMaxWait]; the context's deadline and Params.RemainingTime
// shorten it.
func WithMaxWait(d time.Duration) Option { return func(o *options) { o.maxWait = d } }

// WithClockAllowance sets ε for the wall-clock fast path. Default
// [DefaultClockAllowance].
func WithClockAllowance(d time.Duration) Option { return func(o *options) { o.clockAllowance = d } }

// WithoutWallClock turns the wall-clock fast path off: waiters then take
// over an abandoned lock only by the clock-free rule, after watching it
// unchanged for a whole lease. Default: the fast path is on.
func WithoutWallClock() Option { return func(o *options) { o.useWallClock = false } }

// WithDrift sets ρ, the assumed bound on monotonic clock rate differences.
// Default [DefaultDrift].
func WithDrift(rho float64) Option { return func(o *options) { o.drift = rho } }

// WithMaxAttempts sets how many attempts without pacing a failure episode
// makes before it is held back. After a holder releases a [Failure], one
// waiter or newcomer takes over once the failure's not-before time has
// passed, and its attempt counts in the same episode while the failure is
// recent (see [WithFailureWindow]):
//
//   - a failure with a not-before ([WithNotBefore], an upstream's
//     Retry-After) is paced: the next attempt starts at that time, one
//     per not-before for the whole herd, and n does not bound it;
//   - a failure without one (a 5xx, a timeout) is unpaced: while the
//     episode's attempt number is not a multiple of n the next attempt
//     may start at once; the failure of attempt k·n exhausts the episode,
//     and the holder writes a hold-back as the not-before: the failure
//     window times 2^(k-1), at most [WithMaxHoldBack]. So consecutive
//     exhausted episodes back off, and a long outage costs a few calls per
//     minute.
//
// Everybody who comes to the lock before the not-before waits for it, or
// ends Failed with a *[HolderFailedError] naming it when it cannot wait
// that long. The not-before is part of the acquire condition, so a
// newcomer that never saw the failure is held back too. Default
// [DefaultMaxAttempts]; 1 means an unpaced failure is never retried before
// its hold-back. n must be at least 1.
func WithMaxAttempts(n int) Option { return func(o *options) { o.maxAttempts = n } }

// WithMaxHoldBack caps the hold-back after an exhausted failure episode
// (see [WithMaxAttempts]). d must be positive. Default
// [DefaultMaxHoldBack].
func WithMaxHoldBack(d time.Duration) Option { return func(o *options) { o.maxHoldBack = d } }

// WithFailureWindow sets how long a released failure counts as recent:
// until d after its not-before time (see [WithMaxAttempts]), or after the
// release when it has none. While it is recent, its not-before holds back
// others and the next holder's attempt counts in the same episode; after
// that, a failure is old news and the next holder starts a new episode. It
// is also the first hold-back of an exhausted episode. Default (and 0): the
// lease.
func WithFailureWindow(d time.Duration) Option { return func(o *options) { o.failureWindow = d } }

// WithReleaseRetries sets the number of release attempts and the cap on the
// backoff between them. Default [DefaultReleaseAttempts] and
// [DefaultReleaseMaxBackoff].
func WithReleaseRetries(attempts int, maxBackoff time.Duration) Option {
	return func(o *options) { o.releaseAttempts, o.releaseMaxBackoff = attempts, maxBackoff }
}

// WithReleaseTimeout bounds one release, all attempts included, also the
// release the lock makes by itself when its lease or maximum hold runs out.
// Default [DefaultReleaseTimeout]; the context's deadline bounds it further.
// A Lambda middleware sets it to the part of its safety margin that release
// may use.
func WithReleaseTimeout(d time.Duration) Option { return func(o *options) { o.releaseTimeout = d } }

// WithFreshSuccess makes TryAcquireElseWaitForRelease return Released, at
// its first attempt and without writing, when the holder before it published
// Success less than d ago (by the two hosts' wall clocks): an invocation that
// arrives just after the burst it belongs to reads the result instead of
// acquiring the released lock and fetching again. Set it to how long the
// published data stays fresh. Default 0: a released lock is acquirable,
// but for a success published after the call began, which is its answer
// (see [Lock.TryAcquireElseWaitForRelease]). Acquire ignores it.
func WithFreshSuccess(d time.Duration) Option { return func(o *options) { o.freshSuccess = d } }

// WithReadFirst makes TryAcquireElseWaitForRelease read the item before it
// writes: a held lock is then waited for without a write, and a fresh
// success (see [WithFreshSuccess]) is read in one request. Only an absent,
// released or lapsed item is acquired. A herd on one key then writes the
// item about once per holder instead of once per invocation, at the price
// of one more round trip when the lock is free: an uncontended acquire
// costs a strongly consistent GetItem (1 RCU for a lock item) and the
// conditional UpdateItem (1 WCU), two requests instead of one. Default:
// off, and TryAcquireElseWaitForRelease still reads first on every key
// the store's memory (see [HotKeys]) has not found free recently; with
// this option it reads first also on a key that memory found free.
// Acquire ignores it.
func WithReadFirst() Option { return func(o *options) { o.readFirst = true } }

// WithAnnouncements sets how many announcement items (see [Announcer]) a
// key's throttled waiters spread their reads over: n = 0 turns
// announcements off; at most [MaxAnnounceShards]. Only waiters that the
// lock item throttled use them, so they cost an uncontended lock nothing.
// Default [DefaultAnnounceShards], when the store implements [Announcer].
// The items share the lock's table (see [AnnouncementKey]); IAM needs
// dynamodb:PutItem on it besides GetItem and UpdateItem.
func WithAnnouncements(n int) Option { return func(o *options) { o.announceShards = n } }

// WithHotKeys sets the memory of hot keys the Lock shares (see
// [HotKeys]): unless it found the key free recently,
// TryAcquireElseWaitForRelease reads first, as with [WithReadFirst].
// Default: the store's own, when the store keeps one ([DynamoStore] and
// [MemoryStore] do; a Store wrapping one does not, unless its Locks are
// given the inner store's with this option), so every Lock on one store
// shares it. nil turns the memory off: every TryAcquireElseWaitForRelease
// then writes first, unless [WithReadFirst], and a late copy of an acquire
// a call gave up is taken over after a lease instead of freed (see
// [HotKeys]).
func WithHotKeys(h *HotKeys) Option {
	return func(o *options) { o.hotKeys, o.hotKeysSet = h, true }
}

// WithAttemptTimeout sets the least time one store call of a renewal, a
// release, a poll or a read may take. Each call allows more when the
// store answers slowly: SRTT + 4·RTTVAR over the store's answers, doubled
// after a call that got none, never below d and never above the renewal
// interval (see the package documentation).
// A renewal is retried until the lease's validity ends and a release until
// its timeout ([WithReleaseTimeout]) ends, so one hung request never costs
// the lease. Default [DefaultAttemptTimeout].
func WithAttemptTimeout(d time.Duration) Option { return func(o *options) { o.attemptTimeout = d } }

// WithTTL sets how long after acquisition the item may be deleted by
// DynamoDB's TTL. Default [DefaultTTL]; 0 writes no TTL attribute.
func WithTTL(d time.Duration) Option { return func(o *options) { o.ttl = d } }

// WithLogger sets the logger. Default: [slog.Default].
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// WithMetrics sets where measurements go. Default: nowhere.
func WithMetrics(m Metrics) Option { return func(o *options) { o.metrics = m } }

// WithClock sets the wall clock. Default: the system clock.
func WithClock(c Clock) Option { return func(o *options) { o.clock = c } }

func (o *options) validate() error {
	durations := []struct {
		name string
		d    time.Duration
	}{
		{"lease", o.lease}, {"minimum lease", o.minLease}, {"maximum hold", o.maxHold},
		{"renewal floor", o.renewFloor}, {"poll interval", o.pollInterval},
		{"maximum wait", o.maxWait}, {"clock allowance", o.clockAllowance},
		{"release backoff", o.releaseMaxBackoff}, {"release timeout", o.releaseTimeout}, {"ttl", o.ttl}, {"fresh success", o.freshSuccess}, {"attempt timeout", o.attemptTimeout},
		{"failure window", o.failureWindow}, {"maximum hold-back", o.maxHoldBack},
	}
	for _, d := range durations {
		if d.d < 0 {
			return fmt.Errorf("lockcore: %s must not be negative, got %v", d.name, d.d)
		}
	}
	switch {
	case o.minLease == 0:
		return fmt.Errorf("lockcore: minimum lease must be positive")
	case o.maxHold == 0:
		return fmt.Errorf("lockcore: maximum hold must be positive")
	case o.pollInterval == 0:
		return fmt.Errorf("lockcore: poll interval must be positive")
	case o.drift < 0 || o.drift >= 1:
		return fmt.Errorf("lockcore: drift must be in [0, 1), got %v", o.drift)
	case o.maxAttempts < 1:
		return fmt.Errorf("lockcore: maximum attempts must be at least 1, got %d", o.maxAttempts)
	case o.attemptTimeout == 0:
		return fmt.Errorf("lockcore: attempt timeout must be positive")
	case o.maxHoldBack == 0:
		return fmt.Errorf("lockcore: maximum hold-back must be positive")
	case o.releaseTimeout == 0:
		return fmt.Errorf("lockcore: release timeout must be positive")
	case o.announceShards < 0 || o.announceShards > MaxAnnounceShards:
		return fmt.Errorf("lockcore: announcements must be in [0, %d], got %d", MaxAnnounceShards, o.announceShards)
	case o.releaseAttempts < 1:
		return fmt.Errorf("lockcore: release attempts must be at least 1, got %d", o.releaseAttempts)
	case o.metrics == nil:
		return fmt.Errorf("lockcore: metrics must not be nil")
	case o.clock == nil:
		return fmt.Errorf("lockcore: clock must not be nil")
	}
	return nil
}
