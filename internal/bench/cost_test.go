package bench

import (
	"context"
	"encoding/json"
	"os"
	"testing"
	"testing/synctest"
)

// TestCostFigure runs the cost figure for cmd/bench (see RunCostFigure).
func TestCostFigure(t *testing.T) {
	out := os.Getenv(CostFigureOutEnv)
	if out == "" {
		t.Skip(CostFigureOutEnv + " not set: cmd/bench runs this figure")
	}
	sizes := CostSizes
	if s := os.Getenv(CostFigureSizesEnv); s != "" {
		var err error
		if sizes, err = ParseSizes(s); err != nil {
			t.Fatal(err)
		}
	}
	var (
		rs  []CostResult
		err error
	)
	synctest.Test(t, func(t *testing.T) {
		rs, err = RunCostRows(context.Background(), sizes)
	})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.MarshalIndent(rs, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out, raw, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestCostCounts: a burst of 30 on each side of the cost figure. Every
// herdlock and seed caller is answered in one invocation each, herdlock's
// and the Powertools-style layer's by one fetch (the seed has no window in
// which a published success answers a later arrival, which then acquires
// and fetches again); the Powertools-style layer's concurrent duplicates raise and
// retry, so its burst takes more invocations than callers and more write
// units than herdlock's; every row's units, peaks and lock time are
// counted (a row of zeros would pass for a free burst).
func TestCostCounts(t *testing.T) {
	const n = 30
	synctest.Test(t, func(t *testing.T) {
		rows := map[string]CostResult{}
		for _, side := range CostSides {
			r, err := RunCost(context.Background(), side, n)
			if err != nil {
				t.Fatalf("RunCost(%q) = %v", side, err)
			}
			rows[side] = r
			t.Logf("%+v", r)
			if r.ReadUnits+r.WriteUnits <= 0 || r.PeakReadUnits+r.PeakWriteUnits <= 0 || r.LockSeconds <= 0 || r.TotalDollars() <= 0 {
				t.Errorf("%s: nothing counted: %+v", side, r)
			}
			if r.Fetches != 1 && side != SideCostSeed {
				t.Errorf("%s: %d fetches, want 1", side, r.Fetches)
			}
		}
		for _, side := range []string{SideCostDefault, SideCostReadFirst, SideCostSeed} {
			if r := rows[side]; r.Answered != n || r.Errors != 0 || r.Invocations != n {
				t.Errorf("%s: answered %d, errors %d, invocations %d; want %d, 0, %d", side, r.Answered, r.Errors, r.Invocations, n, n)
			}
		}
		p, h := rows[SideCostPowertools], rows[SideCostDefault]
		if p.Invocations <= n || p.WriteUnits <= h.WriteUnits {
			t.Errorf("Powertools-style: %d invocations, %.0f WRU (herdlock %.0f); want more than %d and more than herdlock's", p.Invocations, p.WriteUnits, h.WriteUnits, n)
		}
	})
}
