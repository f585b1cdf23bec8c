package bench

import (
	"context"
	"os"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/herdlock/herdlock/internal/capacity"
)

// TestBrownoutHerdCI is the CI-sized brownout figure, simulated: a herd of
// 100 over a second while every answer takes 700 ms, then 1.5 s (the
// attempt timeout is 500 ms), each invocation a new execution environment
// with its own SDK client: one fetch (not a take-over: nobody held the
// key), no FAILED, no lease lost; and a 20 s
// hold at 700 ms keeps its lease.
func TestBrownoutHerdCI(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		env, err := StartHotEnv(context.Background(), capacity.Config{})
		if err != nil {
			t.Fatal(err)
		}
		herds, hold := RunBrownoutHerds(context.Background(), env, 100)
		for _, r := range herds {
			if r.Fetches != 1 || r.Outcomes[Acquired] != 1 || r.Outcomes[Failed] != 0 || r.LeaseLost != 0 {
				t.Errorf("%s: fetches %d, outcomes %v, lease lost %d, errors %v; want 1 fetch (acquired, not a take-over), 0 FAILED, 0 lease lost",
					r.Mode, r.Fetches, r.Outcomes, r.LeaseLost, r.Errors)
			}
			t.Logf("%s: outcomes %v, %.2f requests/invocation, release-to-return p50/p99 %.0f/%.0f ms",
				r.Mode, r.Outcomes, r.RequestsPerInvocation(), r.Latency.P50, r.Latency.P99)
		}
		if !hold.KeptLease {
			t.Errorf("hold of %v at %v: lease not kept: %s", time.Duration(hold.HoldMs)*time.Millisecond, time.Duration(hold.AnswerMs)*time.Millisecond, hold.Error)
		}
	})
}

// TestBrownoutFigure runs the simulated brownout figure of cmd/bench when
// HERDLOCK_BROWNOUT_FIGURE_OUT names a file for its results.
func TestBrownoutFigure(t *testing.T) {
	out := os.Getenv(BrownoutFigureOutEnv)
	if out == "" {
		t.Skip(BrownoutFigureOutEnv + " not set: cmd/bench runs this figure")
	}
	n, err := strconv.Atoi(os.Getenv(BrownoutFigureSizeEnv))
	if err != nil || n < 1 {
		t.Fatalf("%s = %q, want a herd size", BrownoutFigureSizeEnv, os.Getenv(BrownoutFigureSizeEnv))
	}
	synctest.Test(t, func(t *testing.T) {
		err = writeBrownoutFigure(context.Background(), out, n)
	})
	if err != nil {
		t.Fatalf("writeBrownoutFigure() = %v", err)
	}
}
