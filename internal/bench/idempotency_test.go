package bench

import (
	"context"
	"encoding/json"
	"os"
	"testing"
	"testing/synctest"
)

// TestIdempotencyDuplicates runs the idempotency figure's rows at CI size
// and judges what the callers got: through herdlock's idempotency every
// duplicate waits and gets the one answer (one upstream call, no error,
// no refusal); through the Powertools-style layer the concurrent
// duplicates raise IdempotencyAlreadyInProgressError, so that the
// comparison is between two layers that behave differently.
func TestIdempotencyDuplicates(t *testing.T) {
	tests := []struct {
		source string
		n      int
	}{
		{SourceHTTP, 10},
		{SourceSQS, 2},
	}
	for _, tt := range tests {
		t.Run(tt.source, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h, err := RunIdempotency(context.Background(), SideIdempotency, tt.source, tt.n)
				if err != nil {
					t.Fatal(err)
				}
				if h.UpstreamCalls != 1 || h.Errors != 0 || h.Raised != 0 || h.Answers != 1 || h.Invocations != tt.n {
					t.Errorf("herdlock: %+v; want 1 upstream call, 0 errors, 0 raised, 1 answer, %d invocations", h, tt.n)
				}
				b, err := RunIdempotency(context.Background(), SidePowertools, tt.source, tt.n)
				if err != nil {
					t.Fatal(err)
				}
				if b.UpstreamCalls != 1 || b.Raised == 0 || b.Invocations <= tt.n {
					t.Errorf("Powertools-style: %+v; want 1 upstream call and concurrent duplicates that raise and retry", b)
				}
				t.Logf("herdlock %+v", h)
				t.Logf("powertools %+v", b)
			})
		})
	}
}

// TestIdempotencyFigure runs the whole figure and writes it to the file
// IdempotencyFigureOutEnv names: cmd/bench runs it.
func TestIdempotencyFigure(t *testing.T) {
	out := os.Getenv(IdempotencyFigureOutEnv)
	if out == "" {
		t.Skip(IdempotencyFigureOutEnv + " not set: cmd/bench runs this figure")
	}
	var (
		rs  []IdempotencyResult
		err error
	)
	synctest.Test(t, func(t *testing.T) {
		rs, err = RunIdempotencyRows(context.Background(), IdempotencySizes)
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
