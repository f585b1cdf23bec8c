// Command chaos runs herdlock's fault harness (package internal/chaos) for
// a chosen seed and duration and prints its summary; it exits 1 when a
// check found a violation. `make chaos` runs it, every kind of phase, the
// storm included:
//
//	go run ./internal/chaos/cmd/chaos -seed $(SEED) -duration $(DURATION)
//
// -storm runs the storm phase alone for the duration.
//
// The same binary is the worker: the harness re-executes it with
// chaos.WorkerEnv set.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/herdlock/herdlock/internal/chaos"
)

func main() {
	if chaos.IsWorker() {
		chaos.WorkerMain()
	}
	seed := flag.Int64("seed", 1, "seed of every random decision")
	duration := flag.Duration("duration", 10*time.Minute, "length of the run (phases), checks come after")
	variant := flag.String("variant", string(chaos.VariantLockcore), "lock under test: lockcore, or broken on purpose: seed, norev, noguard, stubborn or nofingerprint")
	ci := flag.Bool("ci", false, "use the CI-sized configuration instead of -duration")
	storm := flag.Bool("storm", false, "run only the storm phase (after a short clean start) for -duration")
	logPath := flag.String("log", "", "JSONL log of every event and decision (default: a file in the temporary directory)")
	flag.Parse()

	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		os.Exit(2)
	}
	cfg := chaos.LongConfig(*seed, *duration)
	switch {
	case *ci:
		cfg = chaos.CIConfig(*seed)
	case *storm:
		cfg = chaos.StormConfig(*seed, *duration)
	}
	cfg.Variant = chaos.Variant(*variant)
	cfg.WorkerCommand = []string{exe}
	cfg.Progress = os.Stderr
	cfg.LogPath = *logPath
	if cfg.LogPath == "" {
		cfg.LogPath = filepath.Join(os.TempDir(), fmt.Sprintf("herdlock-chaos-seed%d-%d.jsonl", *seed, os.Getpid()))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	fmt.Fprintf(os.Stderr, "chaos: seed %d, variant %s, log %s\n", cfg.Seed, cfg.Variant, cfg.LogPath)
	rep, err := chaos.Run(ctx, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		os.Exit(2)
	}
	rep.Print(os.Stdout)
	if rep.Failed() {
		os.Exit(1)
	}
}
