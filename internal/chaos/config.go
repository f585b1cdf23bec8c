package chaos

import (
	"fmt"
	"io"
	"time"

	"github.com/herdlock/herdlock/lockcore"
)

// Variant names the lock implementation the workers run.
type Variant string

const (
	// VariantLockcore is herdlock's lockcore.Lock over lockcore.DynamoStore.
	VariantLockcore Variant = "lockcore"
	// VariantSeed is the seed's protocol (package seedlock): read, sleep,
	// conditional put, re-read; wall-clock expiry; no fence. The
	// self-test expects checks 1 to 4 to catch it.
	VariantSeed Variant = "seed"
	// VariantNoRevision is lockcore.Lock over a store whose renew and
	// release drop the revision condition while claiming to keep it. The
	// self-test expects check 5 to catch it.
	VariantNoRevision Variant = "norev"
	// VariantNoGuard is lockcore.Lock over a store whose acquire drops the
	// failure guard (MaxAttempts 0), and says so in its intent: newcomers
	// take over a failure before its not-before and past the episode's
	// attempts. The self-test expects check 6 to catch it.
	VariantNoGuard Variant = "noguard"
	// VariantStubborn is lockcore.Lock whose holder, when a renewal or its
	// release finds its revision released under it, publishes its failure
	// over that release, as a holder that does not stop at a force-release
	// would. The self-test expects check 7 to catch it.
	VariantStubborn Variant = "stubborn"
	// VariantNoFingerprint is lockcore.Lock whose storm's idempotent
	// operations fingerprint the operation's name, not its payload: a
	// layer that validates no payload, which replays one payload's answer
	// to another (check 15).
	VariantNoFingerprint Variant = "nofingerprint"
)

// PhaseKind says what a phase injects and asserts.
type PhaseKind string

const (
	// Clean: no faults, small skew. Everything asserted.
	Clean PhaseKind = "clean"
	// SmallSkew (phase A): all faults, skew within the clock allowance.
	// Everything asserted.
	SmallSkew PhaseKind = "A"
	// LargeSkew (phase B): all faults, skew and steps beyond the
	// allowance. Holder-level mutual exclusion is counted, not asserted.
	LargeSkew PhaseKind = "B"
	// Herd: rounds of all workers on one cold key; only small delays and
	// the kills of the rounds that kill their holder.
	Herd PhaseKind = "herd"
	// Throttled: small delays only, and the capacity model between the
	// workers and Dynoxide cut down to Config.Throttle per item, so that
	// the workers' own load keeps the contended items at their capacity
	// and the store throttles acquires, polls, renewals and releases.
	// Everything asserted.
	Throttled PhaseKind = "throttle"
	// Storm: everything at once. The request faults and process faults of
	// phase A with skew within the allowance, the capacity model at
	// Config.Throttle per item, brownouts of every proxy, operator
	// force-releases, a failing upstream (with and without Retry-After)
	// and holds that run into the hard maximum (Config.Storm). Everything
	// asserted.
	Storm PhaseKind = "storm"
)

// Phase is one stretch of a run. Start and End are Mono nanoseconds, set by
// Run.
type Phase struct {
	Kind  PhaseKind     `json:"kind"`
	Dur   time.Duration `json:"dur"`
	Start int64         `json:"start"`
	End   int64         `json:"end"`
}

// skewRange returns the skew range of phases of kind k.
func (c *Config) skewRange(k PhaseKind) SkewRange {
	switch k {
	case LargeSkew:
		return c.SkewB
	case Storm:
		return c.SkewStorm
	}
	return c.SkewA
}

// assertsMutex reports whether holder-level mutual exclusion is asserted in
// phases of kind k.
func (k PhaseKind) assertsMutex() bool { return k != LargeSkew }

// SkewRange bounds the skew drawn for each worker in a phase.
type SkewRange struct {
	OffsetMs int64   // offsets uniform in ±OffsetMs
	DriftPPM float64 // drift uniform in ±DriftPPM
	StepMs   int64   // steps uniform in ±StepMs
	Steps    int     // steps per worker per phase
}

// Faults sets the fault rates. Probabilities are per proxied request.
type Faults struct {
	SmallDelayP   float64       // delay U(0, SmallDelayMax)
	SmallDelayMax time.Duration //
	BigDelayP     float64       // delay U(BigDelayMin, BigDelayMax), before or after forwarding
	BigDelayMin   time.Duration
	BigDelayMax   time.Duration
	DropBeforeP   float64 // not forwarded: 500, reset, or hang past the client timeout
	DropAfterP    float64 // writes only: applied, then the response is lost
	DuplicateP    float64 // forwarded twice
	ThrottleP     float64 // synthetic ProvisionedThroughputExceededException, half with x-amz-crc32

	PartitionEvery time.Duration // mean gap between partitions of one worker
	PartitionMin   time.Duration
	PartitionMax   time.Duration

	FreezeEvery time.Duration // SIGSTOP a holder, for U(FreezeMin, FreezeMax) × lease
	FreezeMin   float64
	FreezeMax   float64

	FreezeAfterReturnP   float64 // per cycle: return without releasing, then be frozen
	FreezeAfterReturnMin time.Duration
	FreezeAfterReturnMax time.Duration

	KillEvery    time.Duration // SIGKILL a worker (a holder when there is one)
	RespawnAfter time.Duration
}

// StormFaults sets what storm phases add to the faults of phase A.
type StormFaults struct {
	// Brownouts: every proxy delays every request by U(BrownoutDelayMin,
	// BrownoutDelayMax), before or after forwarding, for U(BrownoutMin,
	// BrownoutMax); one begins every BrownoutEvery on average. The delays
	// are longer than lockcore's attempt timeout.
	BrownoutEvery    time.Duration
	BrownoutMin      time.Duration
	BrownoutMax      time.Duration
	BrownoutDelayMin time.Duration
	BrownoutDelayMax time.Duration

	// OperatorEvery is the mean gap between operator force-releases of a
	// held lock, made with the write of `herdlock release`.
	OperatorEvery time.Duration

	// The upstream fails every call for U(UpstreamFailMin,
	// UpstreamFailMax), one stretch every UpstreamFailEvery on average:
	// with probability RetryAfterP a 429 with Retry-After of
	// U(RetryAfterMin, RetryAfterMax) whole seconds, else a 503 without.
	UpstreamFailEvery time.Duration
	UpstreamFailMin   time.Duration
	UpstreamFailMax   time.Duration
	RetryAfterP       float64
	RetryAfterMin     time.Duration
	RetryAfterMax     time.Duration

	// DropScale multiplies the probabilities of Faults' drops before and
	// after forwarding in storm phases.
	DropScale float64

	// NearMaxHoldP is the probability that a holder works for
	// U(MaxHold-Lease, MaxHold+Lease/2): its renewals run up to the hard
	// maximum and its lease is capped there.
	NearMaxHoldP float64

	// FreshSuccess is the storm cycles' lockcore.WithFreshSuccess: a
	// success published less than this ago is read, not redone, so it
	// stays on the item for the waiters that watched its holder, as a
	// response cache's does (check 12 judges the successes that stayed
	// until a waiter was owed them). 0: none.
	FreshSuccess time.Duration

	// LongRetryAfter, when set, is the Retry-After of each storm phase's
	// first failing stretch of the upstream, longer than the maximum
	// wait: the waiters are refused with that not-before
	// (HolderFailedError) and come back at it, as callers told a time do.
	LongRetryAfter time.Duration

	// BrownoutStretch is a stretch of each storm phase, from a quarter of
	// the way in and after the first random brownout, during which every answer of every worker's store
	// requests takes between 1× and 3× the attempt timeout (the random
	// brownouts pause). 0: none.
	BrownoutStretch time.Duration
	// MisconfigStretch is a stretch of each storm phase, 2 s after the
	// brownout stretch, during which the workers' role may not write the
	// table: every write is answered with AccessDeniedException, as
	// DynamoDB answers it (the operator's role still may). 0: none.
	MisconfigStretch time.Duration

	// Idempotent is the share of storm cycles that deliver an idempotent
	// operation (package middleware/idempotency) instead of calling the
	// lock: an operation drawn as the contended keys are, so that workers
	// deliver it at once and again (duplicates); IdemMismatch is the
	// share of those deliveries whose payload differs under the same key.
	// Check 15 judges what each delivery got. 0: none.
	Idempotent, IdemMismatch float64
}

// Config is one harness run. The zero value is not usable: start from
// [CIConfig] or [LongConfig].
type Config struct {
	Seed    int64
	Variant Variant
	Workers int
	Keys    int           // contended keys, picked with a Zipf law
	Epoch   time.Duration // contended keys get fresh names every Epoch
	Phases  []Phase

	HerdRounds int           // rounds per herd phase; odd rounds kill their holder
	HerdGap    time.Duration // between rounds

	Lease          time.Duration
	Poll           time.Duration
	MaxWait        time.Duration
	MaxHold        time.Duration
	MaxAttempts    int // lockcore.FailureEpisode.MaxAttempts of the workers; check 6 bounds each episode by it
	ClockAllowance time.Duration
	Drift          float64

	// AttemptTimeout is the workers' lockcore.StoreCalls.AttemptTimeout; their
	// SDK clients allow 4× it per attempt (see clientTimeout).
	AttemptTimeout time.Duration
	Attempts       int           // SDK attempts
	MaxBackoff     time.Duration // SDK retry backoff cap

	WorkMedian  time.Duration // lognormal work time
	LongWorkP   float64       // probability of long work, U(LongWorkMin, LongWorkMax)
	LongWorkMin time.Duration
	LongWorkMax time.Duration

	Faults Faults
	// Storm is what storm phases add.
	Storm StormFaults
	// Throttle is the item capacity of throttle and storm phases.
	Throttle ThrottleLimits
	SkewA    SkewRange // clean, A, herd and throttle phases
	SkewB    SkewRange // B phases
	// SkewStorm is the skew of storm phases: any two clocks stay within
	// ClockAllowance of each other for 20 minutes of drift.
	SkewStorm SkewRange

	// RTT and Slack enter the liveness bound (check 3).
	RTT   time.Duration
	Slack time.Duration

	LinTimeout time.Duration // porcupine budget for the whole history

	// WorkerCommand is the binary (and arguments) the parent runs for each
	// worker, with WorkerEnv set; it must call WorkerMain.
	WorkerCommand []string
	// LogPath, when set, receives the JSONL log of every event and decision.
	LogPath string
	// Progress, when set, receives a line per phase and at the end.
	Progress io.Writer
}

// CIConfig returns the configuration of the CI-sized run: about 95 s of
// phases (clean 5 s, A 18 s, B 13 s, herd 5 rounds, throttle 6 s, storm
// 26 s with a brownout stretch of 7 s and a misconfiguration stretch of
// 3 s), 8 workers, 3 contended keys, a hard maximum of 4 s (the harness:
// docs/protocol.md, "How this is checked").
func CIConfig(seed int64) Config {
	c := baseConfig(seed)
	c.Phases = []Phase{{Kind: Clean, Dur: 5 * time.Second}, {Kind: SmallSkew, Dur: 18 * time.Second},
		{Kind: LargeSkew, Dur: 13 * time.Second}, {Kind: Herd}, {Kind: Throttled, Dur: 6 * time.Second},
		{Kind: Storm, Dur: 26 * time.Second}}
	c.Storm.BrownoutStretch, c.Storm.MisconfigStretch = 7*time.Second, 3*time.Second
	// Holds into the hard maximum short enough, and frequent enough, that
	// one survives the brownouts, the operator and the kills of a short
	// storm.
	c.MaxHold, c.Storm.NearMaxHoldP = 4*time.Second, 0.15
	return c
}

// LongConfig returns the configuration of `make chaos`: a clean start, then
// blocks of storm (60 s), A (40 s), B (40 s), herd (5 rounds) and throttle
// (10 s) until d has passed. The work is shorter than in CI and there are
// more workers (12) and keys (12), so that a 10-minute run completes over
// 10,000 lock cycles.
func LongConfig(seed int64, d time.Duration) Config {
	c := longBase(seed)
	c.Phases = []Phase{{Kind: Clean, Dur: 10 * time.Second}}
	total := 10 * time.Second
	herd := c.herdDur()
	for total < d {
		for _, p := range []Phase{{Kind: Storm, Dur: 60 * time.Second}, {Kind: SmallSkew, Dur: 40 * time.Second},
			{Kind: LargeSkew, Dur: 40 * time.Second}, {Kind: Herd}, {Kind: Throttled, Dur: 10 * time.Second}} {
			if total >= d {
				break
			}
			if p.Kind == Herd {
				p.Dur = herd
			} else {
				p.Dur = min(p.Dur, d-total)
			}
			c.Phases = append(c.Phases, p)
			total += p.Dur
		}
	}
	return c
}

// StormConfig returns the storm-only configuration of `chaos -storm`: the
// workers and keys of [LongConfig], a clean start of 5 s, then one storm
// phase until d has passed.
func StormConfig(seed int64, d time.Duration) Config {
	c := longBase(seed)
	const clean = 5 * time.Second
	c.Phases = []Phase{{Kind: Clean, Dur: clean}, {Kind: Storm, Dur: max(d-clean, time.Second)}}
	return c
}

// longBase is the base of the long runs: shorter work, more workers and
// keys than CI, and a porcupine budget for a long history.
func longBase(seed int64) Config {
	c := baseConfig(seed)
	c.Workers = 12
	c.Keys = 12
	c.WorkMedian = 20 * time.Millisecond
	c.LongWorkP = 0.03
	c.LinTimeout = 5 * time.Minute
	return c
}

func baseConfig(seed int64) Config {
	return Config{
		Seed:           seed,
		Variant:        VariantLockcore,
		Workers:        8,
		Keys:           3,
		Epoch:          20 * time.Second,
		HerdRounds:     5,
		HerdGap:        4500 * time.Millisecond,
		Lease:          1500 * time.Millisecond,
		Poll:           200 * time.Millisecond,
		MaxWait:        5 * time.Second,
		MaxHold:        8 * time.Second,
		MaxAttempts:    lockcore.DefaultMaxAttempts,
		ClockAllowance: 250 * time.Millisecond,
		Drift:          0.01,
		AttemptTimeout: 400 * time.Millisecond,
		Attempts:       3,
		MaxBackoff:     100 * time.Millisecond,
		WorkMedian:     200 * time.Millisecond,
		LongWorkP:      0.10,
		LongWorkMin:    1500 * time.Millisecond,
		LongWorkMax:    4 * time.Second,
		Faults: Faults{
			SmallDelayP: 0.20, SmallDelayMax: 50 * time.Millisecond,
			BigDelayP: 0.02, BigDelayMin: 300 * time.Millisecond, BigDelayMax: 1500 * time.Millisecond,
			DropBeforeP: 0.02, DropAfterP: 0.02, DuplicateP: 0.005, ThrottleP: 0.01,
			PartitionEvery: 10 * time.Second, PartitionMin: 500 * time.Millisecond, PartitionMax: 3 * time.Second,
			FreezeEvery: 8 * time.Second, FreezeMin: 0.3, FreezeMax: 3,
			FreezeAfterReturnP: 0.01, FreezeAfterReturnMin: 2 * time.Second, FreezeAfterReturnMax: 6 * time.Second,
			KillEvery: 15 * time.Second, RespawnAfter: time.Second,
		},
		Storm: StormFaults{
			BrownoutEvery: 12 * time.Second, BrownoutMin: time.Second, BrownoutMax: 3 * time.Second,
			BrownoutDelayMin: 600 * time.Millisecond, BrownoutDelayMax: 1200 * time.Millisecond,
			OperatorEvery:     2 * time.Second,
			UpstreamFailEvery: 8 * time.Second, UpstreamFailMin: time.Second, UpstreamFailMax: 4 * time.Second,
			RetryAfterP: 0.5, RetryAfterMin: time.Second, RetryAfterMax: 2 * time.Second,
			NearMaxHoldP: 0.015, DropScale: 2,
			LongRetryAfter: 6 * time.Second, FreshSuccess: 2500 * time.Millisecond,
			BrownoutStretch: 20 * time.Second, MisconfigStretch: 8 * time.Second,
			Idempotent: 0.2, IdemMismatch: 0.2,
		},
		// About a third of what the workers ask of a contended item in
		// the clean phase: the item stays at its capacity.
		Throttle:   ThrottleLimits{WriteUnits: 4, ReadUnits: 12},
		SkewA:      SkewRange{OffsetMs: 100, DriftPPM: 200},
		SkewB:      SkewRange{OffsetMs: 3000, DriftPPM: 200, StepMs: 2000, Steps: 2},
		SkewStorm:  SkewRange{OffsetMs: 60, DriftPPM: 50},
		RTT:        100 * time.Millisecond,
		Slack:      500 * time.Millisecond,
		LinTimeout: time.Minute,
	}
}

// herdDur is how long a herd phase lasts: its rounds plus a lease and a
// wait to let the last round finish.
func (c *Config) herdDur() time.Duration {
	return time.Duration(c.HerdRounds)*c.HerdGap + time.Second
}

// clientTimeout is the workers' SDK per-attempt timeout: four times the
// lock's attempt timeout, the longest answer the contract checks still
// call an answer, so that the lock's own timeouts decide what a slow
// store costs, not the client's.
func (c *Config) clientTimeout() time.Duration { return 4 * c.AttemptTimeout }

// hangFor is how long the proxy holds a request it hangs: past the
// client's attempt timeout.
func (c *Config) hangFor() time.Duration { return c.clientTimeout() + 100*time.Millisecond }

// stretches returns the brownout and misconfiguration stretches of storm
// phase ph (Mono nanoseconds), each zero when it is off or does not fit
// in the phase.
func (c *Config) stretches(ph Phase) (brown, misconfig interval) {
	s := c.Storm
	// After the first random brownout, which comes within the first
	// quarter and lasts at most BrownoutMax and its longest delay, and a
	// second more, so that stormLocked never holds that one back.
	from := ph.Start + int64(ph.Dur/4) + int64(s.BrownoutMax+s.BrownoutDelayMax+time.Second)
	if s.BrownoutStretch > 0 && from+int64(s.BrownoutStretch) <= ph.End-int64(2*time.Second) {
		brown = interval{from, from + int64(s.BrownoutStretch)}
		from = brown.to + int64(2*time.Second)
	}
	if s.MisconfigStretch > 0 && from+int64(s.MisconfigStretch) <= ph.End-int64(2*time.Second) {
		misconfig = interval{from, from + int64(s.MisconfigStretch)}
	}
	return brown, misconfig
}

// LivenessBound is the longest a waiter may take to hold a lock after the
// holder's last applied renewal: L(1+ρ) + one poll (lockcore's staleAfter
// adds it) + two polls at +20% jitter (seeing the last beat, then seeing it
// stale) + two round trips (the read and the acquire) + slack.
func (c *Config) LivenessBound() time.Duration {
	return time.Duration(float64(c.Lease)*(1+c.Drift)) + c.Poll + 2*c.Poll*12/10 + 2*c.RTT + c.Slack
}

func (c *Config) validate() error {
	switch {
	case c.Workers < 2:
		return fmt.Errorf("chaos: need at least 2 workers, got %d", c.Workers)
	case c.Keys < 1:
		return fmt.Errorf("chaos: need at least 1 key, got %d", c.Keys)
	case len(c.Phases) == 0:
		return fmt.Errorf("chaos: no phases")
	case len(c.WorkerCommand) == 0:
		return fmt.Errorf("chaos: no worker command")
	case c.Throttle.WriteUnits <= 0 || c.Throttle.ReadUnits <= 0:
		return fmt.Errorf("chaos: throttle phase capacity must be positive, got %+v", c.Throttle)
	case c.MaxAttempts < 1:
		return fmt.Errorf("chaos: maximum attempts must be at least 1, got %d", c.MaxAttempts)
	}
	switch c.Variant {
	case VariantLockcore, VariantSeed, VariantNoRevision, VariantNoGuard, VariantStubborn, VariantNoFingerprint:
	default:
		return fmt.Errorf("chaos: unknown variant %q", c.Variant)
	}
	return nil
}

// phaseIndex returns the index of the phase that contains true time t, the
// last one after the end and the first before the start.
func phaseIndex(phases []Phase, t int64) int {
	for i, p := range phases {
		if t < p.End {
			return i
		}
	}
	return len(phases) - 1
}
