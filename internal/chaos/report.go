package chaos

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// HerdRound is the outcome of one herd round.
type HerdRound struct {
	Key      string
	Killed   bool
	HolderOK bool
	Workers  int
	Acquired int
	WithData int // RELEASED and read the data
	Empty    int // RELEASED without data
	Failed   int
	Fetches  int
	Refused  int // fetches the upstream refused with a Retry-After (failing rounds)
	Verdict  string
}

// Report is the outcome of a run.
type Report struct {
	Seed    int64
	Variant Variant
	Phases  []Phase
	Bound   time.Duration
	LogPath string
	// MaxAttempts is the workers' lockcore.FailureEpisode.MaxAttempts.
	MaxAttempts int
	Outcomes    map[string]int // TryAcquireElseWaitForRelease outcomes
	Cycles      int            // holds that ended with a release call (lock cycles completed)
	TookOver    int
	Announced   int // RELEASED waits that read the success from a release announcement
	Grants      int // acquisitions applied at the store
	Orphans     int // applied acquisitions no worker learned of
	StoreOps    int

	ReleaseErrors int
	Rejected      int // writes the fenced resource refused
	ShadowStale   int // writes that took the unfenced copy back to an older fence
	LateArrivals  int // writes that reached the resource after the next grant (fencing's job)
	Unmatched     int // writes whose grant was not found

	MutexCounted   int // definite holder overlaps in phases where they are counted, not asserted
	MutexAmbiguous int // holder acts inside the next grant's apply window
	ForcedActs     int // acts of a force-released holder after the next grant, within its lease (check 1's fence stands)

	Operator map[string]int // operator force-releases by outcome: released, refused, skipped, error

	// LockMetrics sums the lockcore counters the workers' Locks recorded
	// (lockcore.Metric* names; the lockcore variants only), such as
	// LockLateCopy, LockLeaseLost and LockTakeover.
	LockMetrics map[string]float64

	UpstreamCalls    int // upstream fetches outside herd rounds
	UpstreamFailed   int // of those, failed (429 or 503)
	Episodes         int // failure episodes check 6 followed
	EpisodeMaxBlock  int // most attempts in a row without a not-before in one episode
	NotBeforeChecked int // failures with a not-before whose next attempts check 6 timed
	HoldBacks        int // of those, hold-backs of exhausted episodes (the rest: Retry-After)

	Faults map[string]int
	// CapacityThrottled counts the requests the capacity model throttled
	// (throttle phases), apart from the proxies' injected throttles.
	CapacityThrottled int

	LivenessChecked int
	Liveness        []time.Duration

	HerdFetches int
	Herd        []HerdRound

	Lin LinResult

	// Comebacks counts the waits of invocations that came back at the
	// not-before they were told (check 10 judges them).
	Comebacks int
	// ContractExcused counts the waits and calls checks 12 to 14 did not judge
	// because their worker was not served as the contract assumes
	// (a process or request fault, an answer lost, late or throttled).
	ContractExcused int
	// NotAppliedChecked counts the calls check 14 timed.
	NotAppliedChecked int
	// Stalls counts the stretches in which a worker process was not
	// scheduled for 100 ms or more (a loaded machine; EvStall).
	Stalls int

	Violations map[Check]int // asserted violations
	Details    map[Check][]string
	// StormFaults counts what happened inside storm phases, by storm
	// fault kind (StormKinds).
	StormFaults map[string]int
	// Idem counts the storm's idempotent deliveries (check 15).
	Idem IdemReport
}

func newReport(cfg *Config) *Report {
	return &Report{Seed: cfg.Seed, Variant: cfg.Variant, Phases: cfg.Phases, Bound: cfg.LivenessBound(), MaxAttempts: cfg.MaxAttempts,
		Outcomes: map[string]int{}, Faults: map[string]int{}, StormFaults: map[string]int{}, Operator: map[string]int{}, LockMetrics: map[string]float64{}, Violations: map[Check]int{}, Details: map[Check][]string{}}
}

// Failed reports whether any asserted check found a violation.
func (r *Report) Failed() bool {
	for _, n := range r.Violations {
		if n > 0 {
			return true
		}
	}
	return false
}

func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(p*float64(len(s)-1) + 0.5)
	return s[i]
}

// Print writes the summary table.
func (r *Report) Print(w io.Writer) {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	var phases []string
	for _, p := range r.Phases {
		phases = append(phases, fmt.Sprintf("%s %v", p.Kind, p.Dur))
	}
	fmt.Fprintf(tw, "seed\t%d\n", r.Seed)
	fmt.Fprintf(tw, "variant\t%s\n", r.Variant)
	fmt.Fprintf(tw, "phases\t%s\n", strings.Join(phases, ", "))
	fmt.Fprintf(tw, "lock cycles completed\t%d (acquire, work, release)\n", r.Cycles)
	fmt.Fprintf(tw, "outcomes\tACQUIRED %d (took over %d), RELEASED %d (%d from announcements), FAILED %d\n",
		r.Outcomes["ACQUIRED"], r.TookOver, r.Outcomes["RELEASED"], r.Announced, r.Outcomes["FAILED"])
	fmt.Fprintf(tw, "store\t%d requests, %d grants, %d orphaned grants\n", r.StoreOps, r.Grants, r.Orphans)
	fmt.Fprintf(tw, "resource\t%d writes rejected by fence; unfenced shadow went back %d times; %d late arrivals; %d without a grant\n",
		r.Rejected, r.ShadowStale, r.LateArrivals, r.Unmatched)
	var kinds []string
	for k := range r.Faults {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	var total int
	for _, k := range kinds {
		total += r.Faults[k]
	}
	fmt.Fprintf(tw, "faults\t%d\n", total)
	for _, k := range kinds {
		fmt.Fprintf(tw, "  %s\t%d\n", k, r.Faults[k])
	}
	if r.hasStorm() {
		fmt.Fprintf(tw, "storm faults\t\n")
		for _, k := range StormKinds {
			fmt.Fprintf(tw, "  %s\t%d\n", k, r.StormFaults[k])
		}
	}
	fmt.Fprintf(tw, "capacity model\t%d requests throttled at the item's capacity\n", r.CapacityThrottled)
	fmt.Fprintf(tw, "liveness\t%d stops checked; p50 %v, p99 %v, max %v (bound %v)\n", r.LivenessChecked,
		percentile(r.Liveness, 0.5).Round(time.Millisecond), percentile(r.Liveness, 0.99).Round(time.Millisecond),
		percentile(r.Liveness, 1).Round(time.Millisecond), r.Bound.Round(time.Millisecond))
	fmt.Fprintf(tw, "herd\t%d rounds, %d upstream fetches\n", len(r.Herd), r.HerdFetches)
	for _, h := range r.Herd {
		fmt.Fprintf(tw, "  %s\t%d workers: %d acquired, %d released with data, %d empty, %d failed; %d fetches (%d refused); %s\n",
			h.Key, h.Workers, h.Acquired, h.WithData, h.Empty, h.Failed, h.Fetches, h.Refused, h.Verdict)
	}
	switch {
	case !r.Lin.Checked:
		fmt.Fprintf(tw, "linearizability\tnot checked (variant sends no intents)\n")
	default:
		verdict := "linearizable"
		if len(r.Lin.Unknown) > 0 {
			verdict = fmt.Sprintf("INCONCLUSIVE for %d keys (%s)", len(r.Lin.Unknown), strings.Join(r.Lin.Unknown, ", "))
		}
		if len(r.Lin.Illegal) > 0 {
			verdict = fmt.Sprintf("NOT linearizable for %d keys", len(r.Lin.Illegal))
		}
		fmt.Fprintf(tw, "linearizability\t%d keys, %d operations, %v: %s\n", r.Lin.Keys, r.Lin.Ops, r.Lin.Elapsed.Round(time.Millisecond), verdict)
	}
	fmt.Fprintf(tw, "mutual exclusion (counted)\t%d definite in phase B, %d ambiguous, %d by force-released holders within their lease\n",
		r.MutexCounted, r.MutexAmbiguous, r.ForcedActs)
	if len(r.LockMetrics) > 0 {
		names := make([]string, 0, len(r.LockMetrics))
		for k := range r.LockMetrics {
			names = append(names, k)
		}
		sort.Strings(names)
		var parts []string
		for _, k := range names {
			parts = append(parts, fmt.Sprintf("%s %g", k, r.LockMetrics[k]))
		}
		fmt.Fprintf(tw, "lock metrics\t%s\n", strings.Join(parts, ", "))
	}
	fmt.Fprintf(tw, "operator\t%d force-released, %d refused, %d skipped (not held), %d errors\n",
		r.Operator["released"], r.Operator["refused"], r.Operator["skipped"], r.Operator["error"])
	fmt.Fprintf(tw, "upstream\t%d calls outside herd rounds, %d failed; %d failure episodes, at most %d attempts in a row without a not-before (maximum %d); %d not-befores timed (%d hold-backs)\n",
		r.UpstreamCalls, r.UpstreamFailed, r.Episodes, r.EpisodeMaxBlock, r.MaxAttempts, r.NotBeforeChecked, r.HoldBacks)
	fmt.Fprintf(tw, "contract\t%d comebacks at a told not-before; %d waits or calls not judged (not served as assumed); %d calls with a not-applied error timed; %d worker stalls of 100 ms or more\n",
		r.Comebacks, r.ContractExcused, r.NotAppliedChecked, r.Stalls)
	fmt.Fprintf(tw, "idempotency\t%d deliveries: %d answered (%d replays), %d refused as a mismatched payload; %d runs\n",
		r.Idem.Calls, r.Idem.Answered, r.Idem.Replays, r.Idem.Mismatched, r.Idem.Runs)
	fmt.Fprintf(tw, "violations (asserted)\t\n")
	for _, c := range Checks {
		fmt.Fprintf(tw, "  %s\t%d\n", c, r.Violations[c])
	}
	if r.LogPath != "" {
		fmt.Fprintf(tw, "log\t%s\n", r.LogPath)
	}
	tw.Flush()
	for _, c := range Checks {
		for _, d := range r.Details[c] {
			fmt.Fprintf(w, "  [%s] %s\n", c, d)
		}
	}
}

// hasStorm reports whether the run had a storm phase.
func (r *Report) hasStorm() bool {
	for _, p := range r.Phases {
		if p.Kind == Storm {
			return true
		}
	}
	return false
}

// StormMissing returns the storm fault kinds that did not happen in the
// run's storm phases.
func (r *Report) StormMissing() []string {
	var m []string
	for _, k := range StormKinds {
		if r.StormFaults[k] == 0 {
			m = append(m, k)
		}
	}
	return m
}
