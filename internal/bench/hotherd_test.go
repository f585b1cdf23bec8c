package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"slices"
	"testing"
	"testing/synctest"

	"github.com/herdlock/herdlock/internal/capacity"
	"github.com/herdlock/herdlock/lockcore"
)

// TestHotHerdCI is the CI-sized hot-key herd: 100 invocations over a second
// through the capacity model, with the item's limits cut in DynamoDB's
// proportion (30 WCU/s, 90 RCU/s) so that the herd meets them as a herd of
// 3000 meets DynamoDB's. Time is virtual (synctest). Each execution
// environment's first call reads first (see lockcore.HotKeys), so a herd
// of new environments spends the larger read capacity and nothing is
// throttled, as in the simulated herd of 3000 (figure 8). Writing first,
// as the default did before, the herd throttled about 23 % of its
// requests (1.8 per invocation, 1.0 writes): the test fails.
func TestHotHerdCI(t *testing.T) {
	for _, mode := range HotModes() {
		t.Run(mode.Name, func(t *testing.T) {
			r := ciHerd(t, ciScaled(mode), HotScenario{N: 100, Arrival: HotArrival, Work: HerdWork})
			if r.Writes == 0 || r.Reads == 0 {
				t.Errorf("the model counted %d writes, %d reads on the item, want some of each", r.Writes, r.Reads)
			}
			if r.ThrottledShare() > 0.02 || r.RequestsPerInvocation() > 1.5 || r.WritesPerInvocation > 0.05 {
				t.Errorf("throttled %.1f%% of %d requests, %.2f requests and %.2f writes per invocation, want <= 2%%, <= 1.5, <= 0.05 (writing first: about 23%%, 1.8, 1.0)",
					100*r.ThrottledShare(), r.Requests, r.RequestsPerInvocation(), r.WritesPerInvocation)
			}
			// In virtual time the calls keep their schedule: the last of
			// 100 evenly spread over 1 s comes 990 ms after the first.
			if want := r.ArrivalMs * float64(r.N-1) / float64(r.N); r.CallSpanMs != want {
				t.Errorf("calls over %.1f ms, want %.1f", r.CallSpanMs, want)
			}
		})
	}
}

// TestHotHerdCIWritingFirst is TestHotHerdCI's herd with each environment's
// first call writing first (no memory of hot keys, WithHerd(Herd{NoHotKeys: true})): the
// herd's writes meet the item's write capacity, as 3000 first writes in a
// second meet DynamoDB's, and are throttled; the waits still end with one
// fetch and no FAILED.
func TestHotHerdCIWritingFirst(t *testing.T) {
	mode := HotModes()[0]
	mode.Name = "writing-first"
	mode.Opts = append(mode.Opts[:len(mode.Opts):len(mode.Opts)], lockcore.WithHerd(lockcore.Herd{NoHotKeys: true}))
	r := ciHerd(t, mode, HotScenario{N: 100, Arrival: HotArrival, Work: HerdWork})
	if r.WritesPerInvocation < 0.95 || r.ThrottledShare() < 0.1 || r.Throttles["UpdateItem"] == 0 {
		t.Errorf("writing first: throttled %.1f%% of %d requests (%v), %.2f writes per invocation; want >= 10%% with UpdateItem among them, >= 0.95 writes",
			100*r.ThrottledShare(), r.Requests, r.Throttles, r.WritesPerInvocation)
	}
	if r.WritesPerInvocation > 1.05 {
		t.Errorf("writes per invocation = %.3f, want <= 1.05: a wait writes only after a read that shows the lock free", r.WritesPerInvocation)
	}
}

// TestHotHerdCIWarmFleet is TestHotHerdCI's herd as Lambda sends it at
// scale: from a warm fleet, 100 environments that have each served one
// invocation on another key, so that none of them makes its first call on
// the herd's key. Each must still learn from a read, not a write, that the
// lock is held: writes on the item at most 5 % of N, at most 1.5 requests
// on the item per invocation, at most 2 % throttled, and release to return
// no slower than the same herd of new environments (the medians over
// five herds of each, p50 and p99 within 10 %, or one round trip: one
// herd's p99 of 100 is nearly its slowest waiter, whose poll phase the
// jitter draws). Before lockcore read first on a key its store
// had not found free, a warm environment's first request was the
// conditional write: 1.00 writes per invocation, and the test failed.
func TestHotHerdCIWarmFleet(t *testing.T) {
	modes := HotModes()
	cold, fleet := modes[0], ciScaled(modes[4])
	if !fleet.WarmFleet || cold.Reuse {
		t.Fatalf("modes %q and %q: want the default on new environments and on a warm fleet", cold.Name, fleet.Name)
	}
	sc := HotScenario{N: 100, Arrival: HotArrival, Work: HerdWork}
	const herds = 5
	var coldP50, coldP99, fleetP50, fleetP99 []float64
	for range herds {
		c := ciHerd(t, cold, sc)
		r := ciHerd(t, fleet, sc)
		if r.Environments != 0 {
			t.Errorf("the herd started %d new environments, want 0: the fleet serves it", r.Environments)
		}
		if r.WritesPerInvocation > 0.05 || r.RequestsPerInvocation() > 1.5 || r.ThrottledShare() > 0.02 {
			t.Errorf("warm fleet: %.2f writes and %.2f requests on the item per invocation, %.1f%% of %d throttled; want <= 0.05, <= 1.5, <= 2%%",
				r.WritesPerInvocation, r.RequestsPerInvocation(), 100*r.ThrottledShare(), r.Requests)
		}
		coldP50, coldP99 = append(coldP50, c.Latency.P50), append(coldP99, c.Latency.P99)
		fleetP50, fleetP99 = append(fleetP50, r.Latency.P50), append(fleetP99, r.Latency.P99)
	}
	slack := func(cold float64) float64 { return max(cold*1.1, cold+ms(HotRTTMax)) }
	c50, c99, f50, f99 := medianOf(coldP50), medianOf(coldP99), medianOf(fleetP50), medianOf(fleetP99)
	if f50 > slack(c50) || f99 > slack(c99) {
		t.Errorf("warm fleet: release to return p50/p99 %.0f/%.0f ms, new environments %.0f/%.0f ms (medians of %d herds; p99s %v and %v): want no slower",
			f50, f99, c50, c99, herds, fleetP99, coldP99)
	}
}

// ciNewEnvs is Lambda's scaling limit cut as ciHotCapacity cuts the item's
// capacity: 1000 new environments every 10 s for a herd of 3000 is 33 for
// one of 100.
const ciNewEnvs = LambdaNewEnvs * 100 / 3000

// ciScaled is mode with its scaling limit, if any, cut to ciNewEnvs.
func ciScaled(mode HotMode) HotMode {
	if mode.NewEnvs > 0 {
		mode.NewEnvs = ciNewEnvs
	}
	return mode
}

// ciHotCapacity is the item's capacity in the CI-sized herds: cut so that
// 100 invocations meet it as 3000 meet DynamoDB's (1000 WCU/s, 3000 RCU/s).
var ciHotCapacity = capacity.Config{WriteUnits: 30, ReadUnits: 90}

// ciCrowdedCapacity is a read capacity that TestHotHerdCIAnnounces's herd
// outgrows, as one item's 3000 RCU/s are outgrown by a herd of 10,000.
var ciCrowdedCapacity = capacity.Config{WriteUnits: 30, ReadUnits: 60}

// ciHerd runs one CI-sized herd of sc in mode at ciHotCapacity, in a
// synctest bubble, and logs its row.
func ciHerd(t *testing.T, mode HotMode, sc HotScenario) HotResult {
	t.Helper()
	return ciHerdAt(t, ciHotCapacity, mode, sc)
}

// ciHerdAt is ciHerd at the item capacity c.
func ciHerdAt(t *testing.T, c capacity.Config, mode HotMode, sc HotScenario) HotResult {
	t.Helper()
	var r HotResult
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		env, err := StartHotEnv(ctx, c)
		if err != nil {
			t.Fatalf("StartHotEnv() = %v", err)
		}
		r = RunHotScenario(ctx, env, mode, sc)
	})
	var buf bytes.Buffer
	_ = WriteHotTable(&buf, []HotResult{r}, DefaultHotTargets(lockcore.DefaultPollInterval))
	t.Logf("\n%s", buf.String())
	if got := r.Outcomes[Failed]; got != 0 {
		t.Errorf("FAILED = %d, want 0; errors %v", got, r.Errors)
	}
	if r.Fetches != 1 {
		t.Errorf("fetches = %d, want 1", r.Fetches)
	}
	if r.LeaseLost != 0 {
		t.Errorf("lease lost %d times, want 0", r.LeaseLost)
	}
	return r
}

// TestHotHerdCIWarmKey: on a warm key (five earlier holds of 300 ms ±
// 10 %, then a pause past the fresh-success window) with environments
// reused, the waiters of the CI-sized herd predict the holder's end from
// the item's hold history and add reads around it to the fixed pace, which
// they keep (so that an early end is seen as soon as at the fixed pace):
// they return within a few round trips of the release, for about the fixed
// pace's requests. At lockcore's fixed pace (the history hidden, see Blind)
// the same herd's p99 is about one poll interval (206-223 ms in three
// runs), or more when a throttled read sends a waiter to the
// announcements (845 ms in one run): the test fails. The warm-up's holds
// are random, and a history whose mean falls short of the herd's hold
// costs each waiter one or two more added reads: one herd in 300 made
// 1.39-1.72 requests per invocation (median 1.43, above 1.6 in 4-7 % of
// herds; the fixed pace 1.38-1.46), so the test judges the median of
// three herds (above 1.55 in none of 100 such medians). Observed: p99
// 23-46 ms, nothing throttled.
func TestHotHerdCIWarmKey(t *testing.T) {
	mode := HotModes()[2] // default-reused
	var reqs []float64
	for range 3 {
		r := ciHerd(t, mode, HotScenario{N: 100, Arrival: HotArrival, Work: HerdWork, Warm: WarmHolds})
		reqs = append(reqs, r.RequestsPerInvocation())
		if r.Latency.P99 > 120 || r.ThrottledShare() > 0.02 {
			t.Errorf("warm key: release-to-return p99 %.0f ms, %.1f%% throttled; want <= 120 ms, <= 2%% (the fixed pace: about 240 ms)",
				r.Latency.P99, 100*r.ThrottledShare())
		}
	}
	slices.Sort(reqs)
	if reqs[1] > 1.55 {
		t.Errorf("warm key: %.3f requests on the item per invocation, the median of three herds (%.3f); want <= 1.55 (the fixed pace: about 1.4)", reqs[1], reqs)
	}
}

// TestHotHerdCIAnnounces: a CI-sized herd past the item's read capacity
// (100 invocations within 200 ms, the holder working 900 ms, on a warm
// key): the waiters that the item throttles read the key's announcement
// shards, the first to see the success relays it, and some of the
// throttled ones return from an announcement (observed: 3.60-3.72 requests
// on the item per invocation, p99 433-503 ms, as at the fixed pace, which
// the waiters keep during the hold; 2.00-2.34 when they slept through it).
// Without announcements (WithHerd(Herd{NoAnnouncements: true})) the herd made 4.71 requests
// on the item per invocation and its p99 was 2332 ms: the test fails.
func TestHotHerdCIAnnounces(t *testing.T) {
	mode := HotModes()[0] // default
	r := ciHerdAt(t, ciCrowdedCapacity, mode, HotScenario{N: 100, Arrival: HotArrival / 5, Work: 3 * HerdWork, Warm: WarmHolds})
	if r.AnnReads == 0 || r.AnnWrites == 0 || r.Announced == 0 {
		t.Errorf("announcements: %d reads, %d writes, %d invocations answered; want some of each", r.AnnReads, r.AnnWrites, r.Announced)
	}
	if r.Throttled == 0 {
		t.Errorf("the item throttled nothing: the herd does not test announcements")
	}
	if r.Latency.P99 > 800 || r.RequestsPerInvocation() > 4.2 {
		t.Errorf("release-to-return p99 %.0f ms, %.3f requests on the item per invocation; want <= 800 ms, <= 4.2",
			r.Latency.P99, r.RequestsPerInvocation())
	}
}

// TestHotKeyFigure runs the hot-key figure of cmd/bench when
// HERDLOCK_HOT_FIGURE_OUT names a file for its results.
func TestHotKeyFigure(t *testing.T) {
	out := os.Getenv(HotFigureOutEnv)
	if out == "" {
		t.Skip(HotFigureOutEnv + " not set: cmd/bench runs this figure")
	}
	sizes := os.Getenv(HotFigureSizesEnv)
	if sizes == "" {
		sizes = "200,1000,3000"
	}
	ns, err := ParseSizes(sizes)
	if err != nil {
		t.Fatal(err)
	}
	var rs []HotResult
	synctest.Test(t, func(t *testing.T) {
		rs, err = RunHotHerds(context.Background(), ns)
	})
	if err != nil {
		t.Fatalf("RunHotHerds() = %v", err)
	}
	raw, err := json.MarshalIndent(rs, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out, raw, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestHotHerdCIPredictionNoSlower: on a warm key whose herd (100
// invocations within 100 ms, 300 ms holds) the item's read capacity (150
// RCU/s here) only just serves at the fixed pace, the reads a prediction
// adds must not make the herd slower than that pace (the history hidden,
// see Blind): its median release-to-return no later than the fixed
// pace's, beyond the spread between runs (the p99, one or two waiters, is
// 650-750 ms in most runs and about 1 or 1.5 s in some, at either pace).
// The herd's added reads all come within a few milliseconds of the
// guessed end, when the pace's reads have emptied the item's bucket; each
// one throttled used to stretch the waiter's pace, so the waiters read on
// at two and four intervals (observed without announcements: median
// 819-879 ms against 499-520 at the fixed pace, p99 1103-1172 against
// 666-710). They still cost requests: those added reads are throttled
// (observed: 3.8-4.5 requests per invocation and 28-34 % throttled,
// against 3.5-3.6 and 17 % at the fixed pace).
func TestHotHerdCIPredictionNoSlower(t *testing.T) {
	const runs = 3
	tests := []struct {
		name string
		opts []lockcore.Option
	}{
		{"announcements", nil},
		{"no announcements", []lockcore.Option{lockcore.WithHerd(lockcore.Herd{NoAnnouncements: true})}},
	}
	c := capacity.Config{WriteUnits: 30, ReadUnits: 150}
	sc := HotScenario{N: 100, Arrival: HotArrival / 10, Work: HerdWork, Warm: WarmHolds}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var req, thr, p50, p99 [2]float64 // by blind
			for _, blind := range []bool{false, true} {
				b := 0
				if blind {
					b = 1
				}
				for range runs {
					mode := HotModes()[2] // default-reused
					mode.Opts = append(mode.Opts[:len(mode.Opts):len(mode.Opts)], tt.opts...)
					mode.Blind = blind
					r := ciHerdAt(t, c, mode, sc)
					req[b] += r.RequestsPerInvocation() / runs
					thr[b] += r.ThrottledShare() / runs
					p50[b] += r.Latency.P50 / runs
					p99[b] += r.Latency.P99 / runs
				}
			}
			t.Logf("predictive: %.2f requests per invocation, %.1f%% throttled, release-to-return p50 %.0f ms, p99 %.0f ms; fixed pace: %.2f, %.1f%%, %.0f ms, %.0f ms",
				req[0], 100*thr[0], p50[0], p99[0], req[1], 100*thr[1], p50[1], p99[1])
			if p50[0] > 1.15*p50[1]+20 {
				t.Errorf("predictive herd: release-to-return p50 %.0f ms; want no more than the fixed pace's %.0f ms (+15%% +20 ms)", p50[0], p50[1])
			}
		})
	}
}
