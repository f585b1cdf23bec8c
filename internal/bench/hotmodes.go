package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/herdlock/herdlock/internal/capacity"
	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/middleware/lockmw"
)

// HotModes returns the modes of the hot-key herds: lockcore with the
// fresh-success window lockmw sets by default, writing first (the default)
// or reading first (lockcore.Herd.ReadFirst), each invocation in a new
// execution environment; and the default with environments reused as
// Lambda reuses them, where the store's memory of hot keys
// (lockcore.HotKeys) makes later invocations read first; and the default
// as Lambda runs a burst: environments started no faster than Lambda
// scales a function (LambdaNewEnvs every LambdaScalingPeriod), from none
// (lambda-cold) or on a warm fleet of N environments that have each served
// a call on another key (warm-fleet).
func HotModes() []HotMode {
	fresh := lockcore.WithFreshSuccess(lockmw.DefaultFreshSuccess)
	return []HotMode{
		{Name: "default", Opts: []lockcore.Option{fresh}},
		{Name: "read-first", Opts: []lockcore.Option{fresh, lockcore.WithHerd(lockcore.Herd{ReadFirst: true})}},
		{Name: "default-reused", Opts: []lockcore.Option{fresh}, Reuse: true},
		{Name: "default-lambda-cold", Opts: []lockcore.Option{fresh}, NewEnvs: LambdaNewEnvs},
		{Name: "default-warm-fleet", Opts: []lockcore.Option{fresh}, NewEnvs: LambdaNewEnvs, WarmFleet: true},
	}
}

// Environment of TestHotKeyFigure, which runs the figure in a synctest
// bubble for cmd/bench: where to write the results, and the herd sizes.
// HotModesEnv, when set, names the modes (comma-separated) that figures 8
// and 10 run; all of HotModes when unset.
const (
	HotFigureOutEnv   = "HERDLOCK_HOT_FIGURE_OUT"
	HotFigureSizesEnv = "HERDLOCK_HOT_FIGURE_SIZES"
	HotModesEnv       = "HERDLOCK_HOT_MODES"
)

// selectedModes returns the modes of ms that HotModesEnv names, or ms when
// it is unset; an unknown name is an error.
func selectedModes(ms []HotMode) ([]HotMode, error) {
	names := os.Getenv(HotModesEnv)
	if names == "" {
		return ms, nil
	}
	var out []HotMode
	for _, name := range strings.Split(names, ",") {
		name = strings.TrimSpace(name)
		found := false
		for _, m := range ms {
			if m.Name == name {
				out, found = append(out, m), true
			}
		}
		if !found {
			return nil, fmt.Errorf("bench: %s: no hot-key mode %q", HotModesEnv, name)
		}
	}
	return out, nil
}

// HotSettle is the (virtual) pause between two herds.
const HotSettle = time.Second

// ParseSizes reads comma-separated herd sizes.
func ParseSizes(s string) ([]int, error) {
	var ns []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("bench: bad herd size %q", f)
		}
		ns = append(ns, n)
	}
	return ns, nil
}

// RunHotHerds runs every mode at each size in ns, then [HotStress], on a
// cold key and on a warm one ([WarmHolds] earlier holds), through one
// capacity model at DynamoDB's limits; each herd has a fresh key, whose
// buckets start full. Call it in a synctest bubble.
func RunHotHerds(ctx context.Context, ns []int) ([]HotResult, error) {
	env, err := StartHotEnv(ctx, capacity.Config{})
	if err != nil {
		return nil, err
	}
	modes, err := selectedModes(HotModes())
	if err != nil {
		return nil, err
	}
	var rs []HotResult
	for _, mode := range modes {
		for _, warm := range []int{0, WarmHolds} {
			for _, n := range ns {
				rs = append(rs, RunHotScenario(ctx, env, mode, HotScenario{N: n, Arrival: HotArrival, Work: HerdWork, Warm: warm}))
				time.Sleep(HotSettle)
			}
			stress := HotStress
			stress.Warm = warm
			rs = append(rs, RunHotScenario(ctx, env, mode, stress))
			time.Sleep(HotSettle)
		}
	}
	return rs, nil
}

// HotStress is the extra herd of the figure: 3000 invocations arriving
// within 200 ms while the holder works 3 s, so that the waiters' polls alone
// ask for five times the item's read capacity.
var HotStress = HotScenario{N: 3000, Arrival: 200 * time.Millisecond, Work: 3 * time.Second}

// RunHotFigure runs the hot-key herds of cmd/bench at the given sizes:
// `go test -run TestHotKeyFigure` on this package in the module at root,
// because testing/synctest needs a test.
func RunHotFigure(ctx context.Context, root, sizes string) ([]HotResult, error) {
	if _, err := ParseSizes(sizes); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "herdlock-hot-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "hot.json")
	cmd := exec.CommandContext(ctx, "go", "test", "-run", "^TestHotKeyFigure$", "-count", "1", "-timeout", "30m", "./internal/bench")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), HotFigureOutEnv+"="+out, HotFigureSizesEnv+"="+sizes)
	if b, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("bench: hot-key figure: %v: %s", err, lastLines(b, 8))
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		return nil, err
	}
	var rs []HotResult
	if err := json.Unmarshal(raw, &rs); err != nil {
		return nil, fmt.Errorf("bench: hot-key figure: %w", err)
	}
	return rs, nil
}
