package lockcore

import (
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/herdlock/herdlock/lockcore/storeapi"
)

// Defaults for the options of [New] that change what a caller gets. A
// Lambda middleware normally overrides only the maximum hold, from the
// invocation's deadline. The other defaults are stated in the doc comment
// of their option and in docs/configuration.md.
const (
	// DefaultLease is how long a holder's lease lasts without renewal.
	DefaultLease = 6 * time.Second
	// DefaultMaxHold is the hard maximum a lock may be held, renewals
	// included.
	DefaultMaxHold = 5 * time.Minute
	// DefaultPollInterval is how often a waiter reads the lock item, before
	// ±20% jitter. It does not depend on the lease.
	DefaultPollInterval = 200 * time.Millisecond
	// DefaultMaxWait is how long TryAcquireElseWaitForRelease waits at most.
	DefaultMaxWait = 30 * time.Second
	// DefaultMaxAttempts is how many unpaced attempts (failures without
	// a not-before) a failure episode makes before it is held back: one
	// such failure is retried once, by one taker-over (see
	// [FailureEpisode]).
	DefaultMaxAttempts = 2
)

// The defaults of the folded options' fields (see [Clocks], [StoreCalls],
// [FailureEpisode], [Herd]) and of [WithTTL].
const (
	defaultMinLease          = time.Second
	defaultRenewFloor        = 500 * time.Millisecond
	defaultClockAllowance    = time.Second
	defaultDrift             = 0.01
	defaultMaxHoldBack       = 2 * time.Minute
	defaultReleaseAttempts   = 5
	defaultReleaseMaxBackoff = 2 * time.Second
	defaultReleaseTimeout    = 10 * time.Second
	defaultAttemptTimeout    = 500 * time.Millisecond
	defaultTTL               = 7 * 24 * time.Hour
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
	autoRelease       time.Duration // 0: releaseTimeout
	ttl               time.Duration
	freshSuccess      time.Duration
	readFirst         bool
	hotKeys           *HotKeys
	hotKeysSet        bool // Herd.HotKeys was given: hotKeys replaces the store's
	announceShards    int
	attemptTimeout    time.Duration
	logger            *slog.Logger
	metrics           Metrics
	clock             Clock
	contradictions    []string // fields of one struct option that contradict each other
}

func defaultOptions() options {
	return options{
		lease:             DefaultLease,
		minLease:          defaultMinLease,
		maxHold:           DefaultMaxHold,
		renewFloor:        defaultRenewFloor,
		pollInterval:      DefaultPollInterval,
		maxWait:           DefaultMaxWait,
		clockAllowance:    defaultClockAllowance,
		useWallClock:      true,
		drift:             defaultDrift,
		maxAttempts:       DefaultMaxAttempts,
		maxHoldBack:       defaultMaxHoldBack,
		releaseAttempts:   defaultReleaseAttempts,
		releaseMaxBackoff: defaultReleaseMaxBackoff,
		releaseTimeout:    defaultReleaseTimeout,
		ttl:               defaultTTL,
		announceShards:    defaultAnnounceShards,
		attemptTimeout:    defaultAttemptTimeout,
		metrics:           noMetrics{},
		clock:             systemClock{},
	}
}

// Option configures a [Lock].
type Option func(*options)

// WithLease sets the lease length. Default [DefaultLease]; a lease below the
// minimum lease ([StoreCalls].MinLease) is raised to it, with a warning.
func WithLease(d time.Duration) Option { return func(o *options) { o.lease = d } }

// WithMaxHold sets the hard maximum hold. Default [DefaultMaxHold]. The
// effective maximum is also capped by Params.RemainingTime.
func WithMaxHold(d time.Duration) Option { return func(o *options) { o.maxHold = d } }

// WithPollInterval sets the waiters' poll interval, before ±20% jitter.
// Default [DefaultPollInterval]. Every waiter reads the item once per
// interval, whatever else waits: n waiters make about n/interval strongly
// consistent reads per second on the item.
func WithPollInterval(d time.Duration) Option { return func(o *options) { o.pollInterval = d } }

// WithMaxWait sets how long TryAcquireElseWaitForRelease waits at most.
// Default [DefaultMaxWait]; the context's deadline and Params.RemainingTime
// shorten it.
func WithMaxWait(d time.Duration) Option { return func(o *options) { o.maxWait = d } }

// Clocks says which wall clock the lock reads and how far it trusts the
// hosts' clocks (see [WithClocks]). A zero field leaves its setting as it
// is (the default unless an earlier option set it).
type Clocks struct {
	// Wall is the wall clock whose readings the lock stores and compares
	// on the wall-clock fast path. Default: the system clock.
	Wall Clock
	// Allowance is ε, the bound assumed on any two hosts' wall clock
	// difference for the wall-clock fast path. Default 1s.
	Allowance time.Duration
	// Drift is ρ, the bound assumed on the rate difference of two hosts'
	// monotonic clocks for the clock-free path, above 0 and below 1 (0
	// keeps the setting). Default 0.01.
	Drift float64
	// NoWallClockPath turns the wall-clock fast path off: waiters then take
	// over an abandoned lock only by the clock-free rule, after watching
	// it unchanged for a whole lease. Default false: the fast path is on.
	NoWallClockPath bool
}

// WithClocks sets the wall clock and the clock bounds the lock assumes
// (see [Clocks]; every field has its default there). Default: the system
// clock, ε 1s, ρ 0.01, the wall-clock fast path on.
func WithClocks(c Clocks) Option {
	return func(o *options) {
		if c.Wall != nil {
			o.clock = c.Wall
		}
		if c.Allowance != 0 {
			o.clockAllowance = c.Allowance
		}
		if c.Drift != 0 {
			o.drift = c.Drift
		}
		if c.NoWallClockPath {
			o.useWallClock = false
		}
	}
}

// FailureEpisode bounds the attempts of a failure episode and its
// hold-back (see [WithFailureEpisode]). A zero field leaves its setting as
// it is (the default unless an earlier option set it).
//
// After a holder releases a [Failure], one waiter or newcomer takes over
// once the failure's not-before time has passed, and its attempt counts
// in the same episode while the failure is recent (see Window):
//
//   - a failure with a not-before ([WithNotBefore], an upstream's
//     Retry-After) is paced: the next attempt starts at that time, one
//     per not-before for the whole herd, and MaxAttempts does not bound it;
//   - a failure without one (a 5xx, a timeout) is unpaced: while the
//     episode's attempt number is not a multiple of n = MaxAttempts the
//     next attempt may start at once; the failure of attempt k·n exhausts
//     the episode, and the holder writes a hold-back as the not-before:
//     the failure window times 2^(k-1), at most MaxHoldBack. So
//     consecutive exhausted episodes back off, and a long outage costs a
//     few calls per minute.
//
// Everybody who comes to the lock before the not-before waits for it, or
// ends Failed with a *[HolderFailedError] naming it when it cannot wait
// that long. The not-before is part of the acquire condition, so a
// newcomer that never saw the failure is held back too.
type FailureEpisode struct {
	// MaxAttempts is how many attempts without pacing an episode makes
	// before it is held back, at least 1; 1 means an unpaced failure is
	// never retried before its hold-back. Default [DefaultMaxAttempts].
	MaxAttempts int
	// MaxHoldBack caps the hold-back after an exhausted episode. Default 2m.
	MaxHoldBack time.Duration
	// Window is how long a released failure counts as recent: until
	// Window after its not-before time, or after the release when it has
	// none. While it is recent, its not-before holds back others and the
	// next holder's attempt counts in the same episode; after that, a
	// failure is old news and the next holder starts a new episode. It is
	// also the first hold-back of an exhausted episode. Default: the lease.
	Window time.Duration
}

// WithFailureEpisode sets the attempt bound and hold-back of failure
// episodes (see [FailureEpisode]; every field has its default there).
// Default: [DefaultMaxAttempts] attempts, a hold-back of at most 2m, a
// window of one lease.
func WithFailureEpisode(e FailureEpisode) Option {
	return func(o *options) {
		if e.MaxAttempts != 0 {
			o.maxAttempts = e.MaxAttempts
		}
		if e.MaxHoldBack != 0 {
			o.maxHoldBack = e.MaxHoldBack
		}
		if e.Window != 0 {
			o.failureWindow = e.Window
		}
	}
}

// StoreCalls paces and bounds the lock's calls to the store: its
// renewals, its releases and each call's timeout (see [WithStoreCalls]).
// A zero field leaves its setting as it is (the default unless an earlier
// option set it).
type StoreCalls struct {
	// MinLease is the shortest lease accepted; shorter ones are raised to
	// it with a warning, so that renewals have time to land. Default 1s.
	MinLease time.Duration
	// RenewFloor is the shortest renewal interval: the lock renews every
	// max(RenewFloor, lease/3). Default 500ms.
	RenewFloor time.Duration
	// AttemptTimeout is the least time one store call of a renewal, a
	// release, a poll or a read may take. Each call allows more when the
	// store answers slowly: SRTT + 4·RTTVAR over the store's answers,
	// doubled after a call that got none, never below AttemptTimeout and
	// never above the renewal interval for a renewal, the longer of it and
	// 4·AttemptTimeout for the other calls (see the package documentation). A
	// renewal is retried until the lease's validity ends and a release
	// until ReleaseTimeout ends, so one hung request never costs the
	// lease. Default 500ms.
	AttemptTimeout time.Duration
	// ReleaseTimeout bounds one release, all attempts included, also the
	// release the lock makes by itself when its lease or maximum hold runs
	// out (unless AutoReleaseTimeout is set); the context's deadline bounds
	// it further. Default 10s.
	ReleaseTimeout time.Duration
	// AutoReleaseTimeout, when set, bounds instead the release the lock
	// makes by itself when its lease or maximum hold runs out, and the
	// settling read of an acquire whose answer was lost. A Lambda
	// middleware sets it to the part of its safety margin that release may
	// use, so that the release at the maximum hold ends before the
	// deadline, while a holder's own Release, made with time to spare,
	// may take longer. Default: ReleaseTimeout.
	AutoReleaseTimeout time.Duration
	// ReleaseAttempts is how many times a release tries, at least 1.
	// Default 5.
	ReleaseAttempts int
	// ReleaseMaxBackoff caps the wait between release attempts. Default 2s.
	ReleaseMaxBackoff time.Duration
}

// WithStoreCalls sets the pace and bounds of the lock's store calls (see
// [StoreCalls]; every field has its default there). Default: a minimum
// lease of 1s, a renewal floor of 500ms, an attempt timeout of 500ms, a
// release timeout of 10s with 5 attempts and backoff of at most 2s.
func WithStoreCalls(c StoreCalls) Option {
	return func(o *options) {
		if c.MinLease != 0 {
			o.minLease = c.MinLease
		}
		if c.RenewFloor != 0 {
			o.renewFloor = c.RenewFloor
		}
		if c.AttemptTimeout != 0 {
			o.attemptTimeout = c.AttemptTimeout
		}
		if c.ReleaseTimeout != 0 {
			o.releaseTimeout = c.ReleaseTimeout
		}
		if c.AutoReleaseTimeout != 0 {
			o.autoRelease = c.AutoReleaseTimeout
		}
		if c.ReleaseAttempts != 0 {
			o.releaseAttempts = c.ReleaseAttempts
		}
		if c.ReleaseMaxBackoff != 0 {
			o.releaseMaxBackoff = c.ReleaseMaxBackoff
		}
	}
}

// WithFreshSuccess makes TryAcquireElseWaitForRelease return Released, at
// its first attempt and without writing, when the holder before it published
// Success less than d ago (by the two hosts' wall clocks): an invocation that
// arrives just after the burst it belongs to reads the result instead of
// acquiring the released lock and fetching again. Set it to how long the
// published data stays fresh. Default 0: a released lock is acquirable,
// but for a success published after the call began, which is its answer
// (see [Lock.TryAcquireElseWaitForRelease]). Acquire ignores it.
func WithFreshSuccess(d time.Duration) Option { return func(o *options) { o.freshSuccess = d } }

// Herd says how TryAcquireElseWaitForRelease meets a herd on one key:
// whether it reads before it writes, the memory of hot keys that decides
// that, and the announcement items throttled waiters read (see
// [WithHerd]). A zero field leaves its setting as it is (the default
// unless an earlier option set it); HotKeys with NoHotKeys, or
// Announcements with NoAnnouncements, is a configuration error.
type Herd struct {
	// ReadFirst makes TryAcquireElseWaitForRelease read the item before it
	// writes on every key: a held lock is then waited for without a write,
	// and a fresh success (see [WithFreshSuccess]) is read in one request.
	// Only an absent, released or lapsed item is acquired. A herd on one
	// key then writes the item about once per holder instead of once per
	// invocation, at the price of one more round trip when the lock is
	// free: an uncontended acquire costs a strongly consistent GetItem (1
	// RCU for a lock item) and the conditional UpdateItem (1 WCU), two
	// requests instead of one. Default false: it still reads first on
	// every key the memory of hot keys has not found free recently; with
	// ReadFirst it reads first also on a key that memory found free.
	// Acquire ignores it.
	ReadFirst bool
	// HotKeys is the memory of hot keys the Lock shares (see [HotKeys]):
	// unless it found the key free recently,
	// TryAcquireElseWaitForRelease reads first, as with ReadFirst.
	// Default: the store's own, when the store keeps one ([DynamoStore]
	// and [MemoryStore] do, of 1024 keys; a Store wrapping one does not,
	// unless its Locks are given the inner store's here), so every Lock on
	// one store shares it.
	HotKeys *HotKeys
	// NoHotKeys turns the memory off: every TryAcquireElseWaitForRelease
	// then writes first, unless ReadFirst, and a late copy of an acquire a
	// call gave up is taken over after a lease instead of freed (see
	// [HotKeys]). Default false.
	NoHotKeys bool
	// Announcements is how many announcement items (see
	// [storeapi.Announcer]) a key's throttled waiters spread their reads
	// over, at most [storeapi.MaxAnnounceShards]. Only waiters that the
	// lock item throttled use them, so they cost an uncontended lock
	// nothing. The items share the lock's table (see
	// [storeapi.AnnouncementKey]); IAM needs dynamodb:PutItem on it besides
	// GetItem and UpdateItem. Default 8, when the store implements
	// [storeapi.Announcer].
	Announcements int
	// NoAnnouncements turns announcements off. Default false.
	NoAnnouncements bool
}

// WithHerd sets how TryAcquireElseWaitForRelease meets a herd (see
// [Herd]; every field has its default there). Default: read first on the
// keys the store's memory of hot keys has not found free recently, and 8
// announcement items per key when the store keeps them.
func WithHerd(h Herd) Option {
	return func(o *options) {
		if h.HotKeys != nil && h.NoHotKeys {
			o.contradictions = append(o.contradictions, "Herd: HotKeys and NoHotKeys")
		}
		if h.Announcements != 0 && h.NoAnnouncements {
			o.contradictions = append(o.contradictions, "Herd: Announcements and NoAnnouncements")
		}
		if h.ReadFirst {
			o.readFirst = true
		}
		if h.HotKeys != nil {
			o.hotKeys, o.hotKeysSet = h.HotKeys, true
		}
		if h.NoHotKeys {
			o.hotKeys, o.hotKeysSet = nil, true
		}
		if h.Announcements != 0 {
			o.announceShards = h.Announcements
		}
		if h.NoAnnouncements {
			o.announceShards = 0
		}
	}
}

// WithTTL sets how long after acquisition the item may be deleted by
// DynamoDB's TTL. It is clean-up only: expiry never depends on it.
// Default 168h (7 days); 0 writes no TTL attribute.
func WithTTL(d time.Duration) Option { return func(o *options) { o.ttl = d } }

// WithLogger sets the logger. Default: [slog.Default].
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// WithMetrics sets where measurements go. Default: nowhere.
func WithMetrics(m Metrics) Option { return func(o *options) { o.metrics = m } }

func (o *options) validate() error {
	durations := []struct {
		name string
		d    time.Duration
	}{
		{"lease", o.lease}, {"minimum lease", o.minLease}, {"maximum hold", o.maxHold},
		{"renewal floor", o.renewFloor}, {"poll interval", o.pollInterval},
		{"maximum wait", o.maxWait}, {"clock allowance", o.clockAllowance},
		{"release backoff", o.releaseMaxBackoff}, {"release timeout", o.releaseTimeout}, {"automatic release timeout", o.autoRelease}, {"ttl", o.ttl}, {"fresh success", o.freshSuccess}, {"attempt timeout", o.attemptTimeout},
		{"failure window", o.failureWindow}, {"maximum hold-back", o.maxHoldBack},
	}
	for _, d := range durations {
		if d.d < 0 {
			return fmt.Errorf("lockcore: %s must not be negative, got %v", d.name, d.d)
		}
	}
	if len(o.contradictions) > 0 {
		return fmt.Errorf("lockcore: %s: give one of each", strings.Join(o.contradictions, ", "))
	}
	switch {
	case o.minLease == 0:
		return fmt.Errorf("lockcore: minimum lease must be positive")
	case o.maxHold == 0:
		return fmt.Errorf("lockcore: maximum hold must be positive")
	case o.pollInterval == 0:
		return fmt.Errorf("lockcore: poll interval must be positive")
	case o.drift <= 0 || o.drift >= 1:
		return fmt.Errorf("lockcore: drift must be above 0 and below 1, got %v", o.drift)
	case o.maxAttempts < 1:
		return fmt.Errorf("lockcore: maximum attempts must be at least 1, got %d", o.maxAttempts)
	case o.attemptTimeout == 0:
		return fmt.Errorf("lockcore: attempt timeout must be positive")
	case o.maxHoldBack == 0:
		return fmt.Errorf("lockcore: maximum hold-back must be positive")
	case o.releaseTimeout == 0:
		return fmt.Errorf("lockcore: release timeout must be positive")
	case o.announceShards < 0 || o.announceShards > storeapi.MaxAnnounceShards:
		return fmt.Errorf("lockcore: announcements must be in [0, %d], got %d", storeapi.MaxAnnounceShards, o.announceShards)
	case o.releaseAttempts < 1:
		return fmt.Errorf("lockcore: release attempts must be at least 1, got %d", o.releaseAttempts)
	case o.metrics == nil:
		return fmt.Errorf("lockcore: metrics must not be nil")
	case o.clock == nil:
		return fmt.Errorf("lockcore: clock must not be nil")
	}
	return nil
}
