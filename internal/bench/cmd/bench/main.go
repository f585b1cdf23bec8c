// Command bench runs herdlock's benchmark report (`make bench`): on one
// Dynoxide server it starts itself, it measures herdlock and the seed's
// protocol side by side, prints one table, and writes the raw numbers as
// JSON.
//
//	go run ./internal/bench/cmd/bench -out bench.out/results.json
//
// -figures 8 runs only the hot-key herds (with the uncontended figure, which
// always runs), -hot-n chooses their sizes; figure 10 is the hot-key herd
// on real servers (Dynoxide behind the capacity model), -real-n its size,
// -hot-modes the modes of both (e.g. default,default-warm-fleet);
// figure 11 the handoffs to a few waiters on Dynoxide; figure 12 the
// brownout (every answer after 700 ms, then 1.5 s): herds on Dynoxide
// (-brownout-n) and simulated (-brownout-sim-n), and a 20 s hold; figure 13
// the idempotency duplicates, herdlock's against a Powertools-style layer
// (simulated). The run ends with the hot-key target table.
//
// Run it from the repository root: the cold-start and CPU figures build and
// test packages of the module. It needs the pinned Dynoxide package and
// bin/aws-lambda-rie (make deps; HERDLOCK_RIE names the emulator).
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/herdlock/herdlock/internal/bench"
	"github.com/herdlock/herdlock/internal/capacity"
	"github.com/herdlock/herdlock/internal/seedlock"
	"github.com/herdlock/herdlock/lockcore"
)

func main() {
	out := flag.String("out", "bench.out/results.json", "where to write the raw numbers (JSON)")
	rounds := flag.Int("rounds", 300, "interleaved rounds of the uncontended figure")
	trials := flag.Int("trials", 5, "abandoned-holder trials per side")
	coldTrials := flag.Int("cold-trials", 5, "cold starts per binary")
	benchtime := flag.String("benchtime", "300ms", "-benchtime of the CPU benchmarks")
	readCap := flag.Float64("read-cap", 500, "the peak reads per second on the item that the herd rows check against")
	figures := flag.String("figures", "1,2,3,4,5,6,7,8,9,10,11,12,13,14", "the figures to run, comma-separated")
	hotN := flag.String("hot-n", "200,1000,3000,10000", "herd sizes of the hot-key figure (8), comma-separated")
	realN := flag.Int("real-n", 3000, "herd size of the real-server hot-key figure (10)")
	hotModes := flag.String("hot-modes", "", "the modes of the hot-key figures (8, 10), comma-separated (default: all)")
	brownoutN := flag.Int("brownout-n", 200, "herd size of the brownout figure (12) on Dynoxide")
	brownoutSimN := flag.Int("brownout-sim-n", 10000, "herd size of the simulated brownout figure (12); 0: not run")
	costN := flag.String("cost-n", "10,100,1000,10000", "burst sizes of the cost figure (14), comma-separated")
	flag.Parse()
	if *hotModes != "" {
		os.Setenv(bench.HotModesEnv, *hotModes) // figure 8's test process inherits it
	}
	log.SetFlags(0)
	log.SetPrefix("bench: ")

	only := map[string]bool{}
	for _, f := range strings.Split(*figures, ",") {
		only[strings.TrimSpace(f)] = true
	}
	if err := run(*out, *rounds, *trials, *coldTrials, *benchtime, *readCap, only, *hotN, *realN, [2]int{*brownoutN, *brownoutSimN}, *costN); err != nil {
		log.Fatal(err)
	}
}

// brownoutN is the brownout figure's herd sizes: on Dynoxide, simulated;
// costN the cost figure's burst sizes.
func run(out string, rounds, trials, coldTrials int, benchtime string, readCap float64, only map[string]bool, hotN string, realN int, brownoutN [2]int, costN string) error {
	ctx := context.Background()
	start := time.Now()
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	env, err := bench.StartEnv(ctx)
	if err != nil {
		return err
	}
	defer env.Close()

	r := &bench.Results{
		Machine:   machine(),
		StartedAt: start.UTC().Format(time.RFC3339),
		Settings: bench.Settings{
			PollMs:         ms(lockcore.DefaultPollInterval),
			HerdLeaseMs:    ms(lockcore.DefaultLease),
			MaxReadRate:    readCap,
			HerdWorkMs:     ms(bench.HerdWork),
			AbandonLeaseMs: ms(abandonLease),
			BaselinePollMs: ms(max(seedlock.DefaultPollInterval, seedlock.DefaultLease/2)),
			Server:         "Dynoxide 1.2.1",
		},
	}

	if only["1"] {
		step("1/6 requests per operation")
		h, err := bench.HerdlockRequests(ctx, env)
		if err != nil {
			return err
		}
		b, err := bench.BaselineRequests(ctx, env)
		if err != nil {
			return err
		}
		r.Requests = append(h, b...)
	}

	// The uncontended figure also gives the request time of the latency
	// targets, so it always runs.
	step("2/6 uncontended cost")
	if !only["2"] {
		rounds = 30
	}
	if r.Uncontended, err = bench.RunUncontended(ctx, env, rounds, rounds/10); err != nil {
		return err
	}
	if only["2"] {
		if r.BaselineAR, err = bench.RunBaselineUncontended(ctx, env, max(10, rounds/10)); err != nil {
			return err
		}
		step("2/6 uncontended cost on dynalite")
		if r.UncontendedDynalite, err = uncontendedOnDynalite(ctx, rounds); err != nil {
			return err
		}
	}

	if only["3"] {
		step("3/6 herds")
		// A success stays fresh for a minute: invocations of the burst
		// whose first attempt lands after the release read it instead of
		// fetching again (lockcore.WithFreshSuccess).
		// Waiters no longer enrol on the item (no read-rate cap): each
		// reads once per poll interval.
		herdlock := bench.Herdlock(bench.SideHerdlock, lockcore.WithFreshSuccess(time.Minute))
		baseline := bench.Baseline(bench.SideBaseline, false)
		literal := bench.Baseline(bench.SideBaselineLiteral, true)
		for _, n := range []int{10, 50, 200} {
			for _, s := range []bench.Side{herdlock, baseline, literal} {
				r.Herds = append(r.Herds, bench.RunHerd(ctx, env, s, n))
			}
		}
	}

	renewEvery := max(500*time.Millisecond, abandonLease/3) // lockcore's default renewal floor, or lease/3
	if only["4"] {
		step("4/6 abandoned holder")
		ha := bench.RunAbandoned(ctx, env, bench.Herdlock(bench.SideHerdlock, lockcore.WithLease(abandonLease)),
			abandonWaiters, trials, time.Second, renewEvery)
		ha.LeaseMs, ha.PollMs = ms(abandonLease), ms(lockcore.DefaultPollInterval)
		ba := bench.RunAbandoned(ctx, env, bench.Baseline(bench.SideBaseline, false, seedlock.WithLease(abandonLease)),
			abandonWaiters, trials, time.Second, renewEvery)
		ba.LeaseMs, ba.PollMs = ms(abandonLease), ms(max(seedlock.DefaultPollInterval, abandonLease/2))
		r.Abandoned = []bench.AbandonedResult{ha, ba}
	}

	if only["9"] {
		step("9 failing upstream")
		for _, mode := range []string{bench.Fail429, bench.Fail503} {
			f, err := bench.RunFailing(ctx, env, mode, failingBurst)
			if err != nil {
				return err
			}
			r.Failing = append(r.Failing, f)
		}
	}

	if !only["5"] {
		r.ColdStart.Note = "not run (-figures)"
	} else {
		step("5/6 cold start")
		dir, err := os.MkdirTemp("", "herdlock-bench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		r.ColdStart = bench.RunColdStart(ctx, env, dir, coldTrials)
	}

	if !only["6"] {
		r.CPU.Note = "not run (-figures)"
	} else {
		step("6/6 CPU benchmarks")
		r.CPU = bench.RunCPU(ctx, root, benchtime)
	}

	if only["7"] {
		step("7 same-key herds in one process")
		for _, k := range []int{16, 64} {
			r.ProcessHerds = append(r.ProcessHerds, bench.RunProcessHerd(ctx, env, k, 20))
		}
	}

	if only["8"] {
		step("8 hot-key herds through the capacity model")
		if r.Hot, err = bench.RunHotFigure(ctx, root, hotN); err != nil {
			return err
		}
	}

	if only["10"] {
		step(fmt.Sprintf("10 hot-key herds of %d on real servers (Dynoxide behind the capacity model)", realN))
		if r.RealHot, err = bench.RunRealHot(ctx, env, realN); err != nil {
			return err
		}
	}

	if only["11"] {
		step("11 handoffs to 10 waiters on Dynoxide")
		for _, holds := range []string{bench.HandoffSteady, bench.HandoffErratic} {
			hs, err := bench.RunHandoff(ctx, env, holds, handoffEpisodes, handoffWaiters, 1)
			if err != nil {
				return err
			}
			r.Handoffs = append(r.Handoffs, hs...)
		}
	}

	if only["12"] {
		step(fmt.Sprintf("12 brownout: herds of %d on Dynoxide and %d simulated, every answer after %v", brownoutN[0], brownoutN[1], bench.BrownoutAnswers))
		herds, hold, err := bench.RunRealBrownout(ctx, env, brownoutN[0])
		if err != nil {
			return err
		}
		r.Brownout, r.BrownoutHolds = herds, []bench.BrownoutHoldResult{hold}
		if brownoutN[1] > 0 {
			herds, hold, err := bench.RunSimBrownout(ctx, root, brownoutN[1])
			if err != nil {
				return err
			}
			r.Brownout, r.BrownoutHolds = append(r.Brownout, herds...), append(r.BrownoutHolds, hold)
		}
	}

	if only["13"] {
		step("13 idempotency: duplicates that wait versus duplicates that raise (simulated)")
		if r.Idempotency, err = bench.RunIdempotencyFigure(ctx, root); err != nil {
			return err
		}
	}

	if only["14"] {
		step("14 the cost of a burst on one key (simulated)")
		if r.Cost, err = bench.RunCostFigure(ctx, root, costN); err != nil {
			return err
		}
	}

	r.WallSeconds = time.Since(start).Seconds()
	r.Machine.LoadAvgEnd = loadavg()
	r.HotTargets = bench.HotTargetRows(r)
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	raw, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(out, append(raw, '\n'), 0o644); err != nil {
		return err
	}
	fmt.Printf("\nherdlock benchmarks: %d x %s, %s, %s; %s on loopback; %.0f s; load average %s at start, %s at end\n\n",
		r.Machine.NumCPU, r.Machine.CPUModel, r.Machine.GoVersion, r.Machine.OS, r.Settings.Server, r.WallSeconds,
		r.Machine.LoadAvgStart, r.Machine.LoadAvgEnd)
	if err := bench.WriteTable(os.Stdout, r); err != nil {
		return err
	}
	if len(r.ProcessHerds) > 0 {
		fmt.Println()
		if err := bench.WriteProcessTable(os.Stdout, r.ProcessHerds); err != nil {
			return err
		}
	}
	fmt.Printf("\nherds: poll %v, lease %v, peak-read check %.0f/s, holder works %v; baseline polls every %v.\n",
		lockcore.DefaultPollInterval, lockcore.DefaultLease, readCap, bench.HerdWork, max(seedlock.DefaultPollInterval, seedlock.DefaultLease/2))
	if len(r.Hot) > 0 {
		fmt.Printf("\nhot key: herds arriving evenly over %v, holder works %v, through the capacity model at %.0f WCU/s and %.0f RCU/s per item (burst 1 s):\n\n",
			bench.HotArrival, bench.HerdWork, capacity.DefaultWriteUnits, capacity.DefaultReadUnits)
		if err := bench.WriteHotTable(os.Stdout, r.Hot, bench.DefaultHotTargets(lockcore.DefaultPollInterval)); err != nil {
			return err
		}
	}
	if len(r.RealHot) > 0 {
		fmt.Printf("\nhot key on real servers: Dynoxide behind the capacity model, in real time, one SDK client per execution environment; %d cores, judged on counts:\n\n",
			r.Machine.NumCPU)
		if err := bench.WriteHotTable(os.Stdout, r.RealHot, bench.DefaultHotTargets(lockcore.DefaultPollInterval)); err != nil {
			return err
		}
	}
	if len(r.Handoffs) > 0 {
		fmt.Printf("\nhandoffs on Dynoxide: %d episodes on one key, %d waiters arriving %v after each acquire:\n\n",
			handoffEpisodes, handoffWaiters, bench.HandoffArrival)
		if err := bench.WriteHandoffTable(os.Stdout, r.Handoffs); err != nil {
			return err
		}
	}
	if len(r.Brownout) > 0 || len(r.BrownoutHolds) > 0 {
		fmt.Printf("\nbrownout: every answer late (the request applied halfway), attempt timeout %v, herds over %v, holder works %v, each invocation a new execution environment:\n\n",
			500*time.Millisecond, // lockcore's default attempt timeout
			bench.HotArrival, bench.HerdWork)
		if err := bench.WriteBrownoutTable(os.Stdout, r.Brownout, r.BrownoutHolds); err != nil {
			return err
		}
	}
	if len(r.Idempotency) > 0 {
		fmt.Printf("\nidempotency: duplicates of one operation (upstream call %v), simulated DynamoDB at its per-item limits; clients retry %d times with the SDK's full-jitter backoff, SQS redelivers after %v:\n\n",
			bench.IdempotencyWork, bench.ClientMaxAttempts-1, bench.SQSVisibilityTimeout)
		if err := bench.WriteIdempotencyTable(os.Stdout, r.Idempotency); err != nil {
			return err
		}
	}
	if len(r.Cost) > 0 {
		fmt.Printf("\ncost of a burst on one key: arrivals over %v, upstream call %v, each caller in its own execution environment retrying a failed invocation %d times with the SDK's full-jitter backoff, simulated DynamoDB at its per-item limits; us-east-1 prices: on-demand $%.3f per million WRU and $%.3f per million RRU, provisioned $%.5f per WCU-hour and $%.5f per RCU-hour, Lambda arm64 $%.10f per GB-s at %.0f MB and $%.2f per million requests; dollars per million bursts (provisioned: per hour of the peak's capacity):\n\n",
			bench.HotArrival, bench.HerdWork, bench.ClientMaxAttempts-1, bench.PriceWriteRequestUnit*1e6, bench.PriceReadRequestUnit*1e6,
			bench.PriceWCUHour, bench.PriceRCUHour, bench.PriceLambdaGBSecond, bench.CostMemoryGB*1024, bench.PriceLambdaRequest*1e6)
		if err := bench.WriteCostTable(os.Stdout, r.Cost); err != nil {
			return err
		}
	}
	if len(r.HotTargets) > 0 {
		fmt.Printf("\nhot-key targets:\n\n")
		if err := bench.WriteTargetTable(os.Stdout, r.HotTargets); err != nil {
			return err
		}
		fmt.Println()
	}
	fmt.Printf("abandoned: lease %v, %d waiters, holder dies 1-%.1f s after acquiring.\nraw numbers: %s\n",
		abandonLease, abandonWaiters, 1+renewEvery.Seconds(), out)
	return nil
}

const (
	abandonLease   = 2 * time.Second
	abandonWaiters = 10
	failingBurst   = 50

	handoffEpisodes = 20
	handoffWaiters  = 10
)

func step(s string) { log.Print(s) }

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func machine() bench.Machine {
	m := bench.Machine{NumCPU: runtime.NumCPU(), GoVersion: runtime.Version(), OS: runtime.GOOS + "/" + runtime.GOARCH, LoadAvgStart: loadavg()}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
	}
	return m
}

// loadavg returns the first three fields of /proc/loadavg, or "".
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	return strings.Join(f[:min(3, len(f))], " ")
}

// moduleRoot returns the folder at or above the working directory that
// holds go.mod.
func moduleRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no go.mod at or above %s: run from the repository", wd)
		}
	}
}

// uncontendedOnDynalite runs figure 2 on a dynalite server of its own.
func uncontendedOnDynalite(ctx context.Context, rounds int) (*bench.Uncontended, error) {
	env, err := bench.StartDynaliteEnv(ctx)
	if err != nil {
		return nil, fmt.Errorf("dynalite: %w", err)
	}
	defer env.Close()
	u, err := bench.RunUncontended(ctx, env, rounds, rounds/10)
	if err != nil {
		return nil, fmt.Errorf("dynalite: %w", err)
	}
	return &u, nil
}
