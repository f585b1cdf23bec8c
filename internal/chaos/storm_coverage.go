package chaos

import (
	"net/http"
	"strings"
	"time"

	"github.com/herdlock/herdlock/internal/capacity"
)

// Storm fault kinds: what [Report].StormFaults counts within storm phases.
// Every one of them must happen in a storm for it to be one.
const (
	StormCapacity      = "capacity-throttle"    // a request throttled at the item's capacity
	StormFiveXXBefore  = "5xx-before-apply"     // a 500 for a request never forwarded
	StormFiveXXAfter   = "5xx-after-apply"      // a 500 for a write that was applied
	StormLostResponse  = "lost-response"        // a write applied, its answer never sent (stall, partition)
	StormReset         = "connection-reset"     // a reset before or after forwarding
	StormBrownout      = "brownout"             // a stretch of answers slower than the attempt timeout
	StormKill          = "kill"                 // SIGKILL of a worker
	StormFreeze        = "freeze"               // SIGSTOP of a holder
	StormSkew          = "skew"                 // a request stamped by a clock ahead of the host's (within ε)
	StormOperator      = "operator-release"     // an applied force-release
	StormRetryAfter    = "upstream-retry-after" // an upstream call refused with 429 and Retry-After
	StormNoRetryAfter  = "upstream-503"         // an upstream call failed with 503, no Retry-After
	StormNearMaxHold   = "near-max-hold"        // a hold renewed to within a lease of the hard maximum
	stormSkewThreshold = 10 * time.Millisecond
)

// Storm fault kinds of the storm's two stretches.
const (
	// StormBrownoutStretch is the long brownout (StormFaults.BrownoutStretch).
	StormBrownoutStretch = "brownout-stretch"
	// StormAccessDenied is a write answered AccessDeniedException in the
	// misconfiguration stretch (StormFaults.MisconfigStretch).
	StormAccessDenied = "access-denied"
)

// StormKinds lists the storm fault kinds in report order.
var StormKinds = []string{StormCapacity, StormFiveXXBefore, StormFiveXXAfter, StormLostResponse, StormReset, StormBrownout,
	StormKill, StormFreeze, StormSkew, StormOperator, StormRetryAfter, StormNoRetryAfter, StormNearMaxHold,
	StormBrownoutStretch, StormAccessDenied}

// tallyStorm counts, per storm fault kind, what happened inside storm
// phases.
func (a *analysis) tallyStorm() {
	inStorm := func(t int64) bool { return t >= a.cfg.Phases[0].Start && a.phaseKind(t) == Storm }
	c := a.rep.StormFaults
	for _, f := range a.rec.faults {
		if !inStorm(f.T) {
			continue
		}
		mode, _, _ := strings.Cut(f.Detail, " ")
		switch {
		case f.Kind == FaultDropBefore && mode == "500":
			c[StormFiveXXBefore]++
		case f.Kind == FaultDropAfter && mode == "500":
			c[StormFiveXXAfter]++
		case f.Kind == FaultDropAfter && mode == "stall", f.Kind == FaultPartitionResp:
			c[StormLostResponse]++
		case (f.Kind == FaultDropBefore || f.Kind == FaultDropAfter) && mode == "reset":
			c[StormReset]++
		case f.Kind == FaultBrownout:
			c[StormBrownout]++
		case f.Kind == FaultBrownoutStretch:
			c[StormBrownoutStretch]++
		case f.Kind == FaultAccessDenied:
			c[StormAccessDenied]++
		case f.Kind == FaultKill:
			c[StormKill]++
		case f.Kind == FaultFreeze || f.Kind == FaultFreezeReturned:
			c[StormFreeze]++
		}
	}
	for _, op := range a.rec.ops {
		if !inStorm(op.Call) {
			continue
		}
		if op.Status == http.StatusBadRequest && op.ErrType == string(capacity.ProvisionedThroughputExceeded) {
			c[StormCapacity]++
		}
		if in := op.Intent; in != nil && in.NowMs != 0 {
			// Delays only make a worker's stamp older than the proxy's
			// time; a stamp ahead of it is the worker's skewed clock.
			if ahead := time.Duration(in.NowMs*int64(time.Millisecond) - (op.Call + a.wallBase)); ahead >= stormSkewThreshold {
				c[StormSkew]++
			}
		}
		if in := op.Intent; in != nil && in.Op == "op-release" && op.Status == http.StatusOK {
			c[StormOperator]++
		}
	}
	for _, f := range a.rec.fetches {
		if !inStorm(f.T) || isHerdKey(f.Key) {
			continue
		}
		switch f.Status {
		case http.StatusTooManyRequests:
			c[StormRetryAfter]++
		case http.StatusServiceUnavailable:
			c[StormNoRetryAfter]++
		}
	}
	// A hold renewed near its hard maximum: an applied renewal whose lease
	// ends within a lease of the acquisition's expiry (lockcore caps it
	// there; the renewal after would reach it).
	exp := map[string]int64{}
	capped := map[string]bool{}
	for _, op := range a.rec.ops {
		in := op.Intent
		if in == nil || op.Status != http.StatusOK {
			continue
		}
		switch {
		case in.Op == "acquire":
			exp[in.Rev] = in.ExpMs
		case in.Op == "renew" && inStorm(op.Call) && exp[in.Rev] != 0 && in.LUMs >= exp[in.Rev]-a.cfg.Lease.Milliseconds() && !capped[in.Rev]:
			capped[in.Rev] = true
			c[StormNearMaxHold]++
		}
	}
}
