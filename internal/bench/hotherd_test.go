package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"testing"
	"testing/synctest"

	"github.com/herdlock/herdlock/internal/capacity"
	"github.com/herdlock/herdlock/lockcore"
)

// TestHotHerdCI is the CI-sized hot-key herd: 100 invocations over a second
// through the capacity model, with the item's limits scaled down (30 WCU/s,
// 60 RCU/s) so that the herd meets them as a herd of thousands meets
// DynamoDB's: writes and polls are throttled, except when execution
// environments are reused, whose stores remember the hot key so that later
// invocations read instead of writing. Time is virtual (synctest).
func TestHotHerdCI(t *testing.T) {
	for _, mode := range HotModes() {
		t.Run(mode.Name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := context.Background()
				env, err := StartHotEnv(ctx, capacity.Config{WriteUnits: 30, ReadUnits: 60})
				if err != nil {
					t.Fatalf("StartHotEnv() = %v", err)
				}
				r := RunHot(ctx, env, mode, 100)
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
				switch {
				case r.Writes == 0 || r.Reads == 0:
					t.Errorf("the model counted %d writes, %d reads on the item, want some of each", r.Writes, r.Reads)
				case !mode.Reuse && len(r.Throttles) == 0:
					t.Errorf("the model throttled nothing (%d writes, %d reads), want throttles", r.Writes, r.Reads)
				case mode.Reuse && (r.ThrottledShare() > 0.05 || r.RequestsPerInvocation() > 1.6 || r.WritesPerInvocation > 0.5):
					// Reused environments remember the hot key: later
					// invocations read instead of writing.
					t.Errorf("reused environments: throttled %.1f%% of %d requests, %.2f requests and %.2f writes per invocation, want <= 5%%, <= 1.6, <= 0.5 (writing first: about 23%%, 1.8, 1.0)",
						100*r.ThrottledShare(), r.Requests, r.RequestsPerInvocation(), r.WritesPerInvocation)
				}
				if r.WritesPerInvocation > 1.05 {
					t.Errorf("writes per invocation = %.3f, want <= 1.05", r.WritesPerInvocation)
				}
			})
		})
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
