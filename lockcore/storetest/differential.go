package storetest

import (
	"errors"
	"strings"
	"testing"

	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/lockcore/storeapi"
)

// Differential runs the differential test on sut, each part a subtest of
// t: every fixed case (sequences that once showed a difference),
// DynamoDB's 400 KB item limit to the byte, and a seeded random run of
// opts.Steps calls (opts.Seed; 0 picks one and logs it) against a
// MemoryStore, step by step, comparing outcome and item. opts.Model says
// what sut's server is known to do differently; anything else fails t,
// with the seed and the shortest failing sequence found. It returns the
// random run's report.
//
// Run it on a Store of your own beside [Run]: the conformance suite says
// what a store must do, Differential that it does exactly what
// [lockcore.MemoryStore] does.
func Differential(t *testing.T, sut storeapi.Store, opts DiffOptions) *DiffReport {
	t.Helper()
	t.Run("cases", func(t *testing.T) { runCases(t, sut, opts.Model) })
	t.Run("size-limit-edge", func(t *testing.T) { runSizeEdge(t, sut, opts.Model) })
	return Diff(t, lockcore.NewMemoryStore(), sut, opts)
}

// Fixed sequences that once showed a difference between the stores.
var diffCases = []struct {
	name string
	ops  []op
}{
	// A fresh success must keep every branch of Acquire's condition from
	// admitting a newcomer: here the wall-clock branch, the lease having
	// lapsed long before the release.
	{"FreshSuccessWallClock", []op{
		acquireOp(storeapi.AcquireRequest{Revision: "a", NowMs: baseMs, Lease: lease, LeaseUntilMs: baseMs + 1_000, ExpiresAtMs: baseMs + 2_000}),
		releaseOp("a", baseMs+5_000, lockcore.Success),
		acquireOp(storeapi.AcquireRequest{Revision: "b", NowMs: baseMs + 10_000, Lease: lease, LeaseUntilMs: baseMs + 20_000, ExpiresAtMs: baseMs + 70_000,
			UseWallClock: true, ClockAllowance: allowance, FreshSuccessSinceMs: baseMs + 4_000}),
	}},
	// ... and the clock-free branch: the observed revision and beat are
	// unchanged, because the holder released instead of renewing.
	{"FreshSuccessObserved", []op{
		acquireOp(storeapi.AcquireRequest{Revision: "a", NowMs: baseMs, Lease: lease, LeaseUntilMs: baseMs + 10_000, ExpiresAtMs: baseMs + 60_000}),
		releaseOp("a", baseMs+5_000, lockcore.Success),
		acquireOp(storeapi.AcquireRequest{Revision: "b", NowMs: baseMs + 6_000, Lease: lease, LeaseUntilMs: baseMs + 16_000, ExpiresAtMs: baseMs + 66_000,
			Observed: &storeapi.Observation{Revision: "a", Beat: 0}, FreshSuccessSinceMs: baseMs + 4_000}),
	}},
	// An idempotency record's life (see idemrecord.go): in progress, taken
	// over, the late holder's complete and fail refused, completed with
	// the fingerprint and the answer, fresh to the retention's last
	// millisecond, run again past it, failed with a kept error's
	// not-before; a Get after each step.
	{"IdempotencyRecordLife", newIdemLife(lockcore.Key{}).ops()},
}

func acquireOp(r storeapi.AcquireRequest) op {
	r.Holder, r.RecordAccount = "owner-"+r.Revision, account
	return op{kind: opAcquire, acquire: r}
}

func releaseOp(rev string, nowMs int64, res lockcore.Result) op {
	return op{kind: opRelease, release: storeapi.ReleaseRequest{Revision: rev, NowMs: nowMs, Result: res, ResultRef: "ref-" + rev}}
}

// runCases replays every fixed case on sut against a MemoryStore and fails
// t at the first step whose answers differ.
func runCases(t *testing.T, sut storeapi.Store, m ServerModel) {
	t.Helper()
	for _, tt := range diffCases {
		t.Run(tt.name, func(t *testing.T) {
			r := &runner{ref: lockcore.NewMemoryStore(), sut: sut, opts: DiffOptions{Model: m}.withDefaults(), prefix: "case-" + randomHex(6)}
			s := r.newStepper(0)
			for i, o := range tt.ops {
				ref, got, diffs, err := s.step(t.Context(), o)
				if err != nil {
					t.Fatalf("step %d: %v", i+1, err)
				}
				if len(diffs) > 0 {
					t.Fatalf("step %d %s:\nreference: %s\nstore under test: %s\n  %s", i+1, o, ref, got, strings.Join(diffs, "\n  "))
				}
			}
		})
	}
}

// sizeEdge returns a Release, after the Acquire of acquireOp's request "a",
// whose item holds a full answer and a reference of n bytes.
func sizeEdge(n int) []op {
	return []op{
		acquireOp(storeapi.AcquireRequest{Revision: "a", NowMs: baseMs, Lease: lease, LeaseUntilMs: baseMs + 10_000, ExpiresAtMs: baseMs + 60_000}),
		{kind: opRelease, release: storeapi.ReleaseRequest{Revision: "a", NowMs: baseMs + 5_000, Result: lockcore.Success,
			ResultRef: strings.Repeat("r", n), Answer: make([]byte, lockcore.MaxAnswerBytes)}},
	}
}

// runSizeEdge checks DynamoDB's 400 KB item limit to the byte: it finds the
// largest item the reference accepts (a Release with a full answer and the
// longest reference that fits), and requires sut to give the same answers to
// that release and to one a byte longer. The item's numbers (times like
// baseMs, with trailing zeros) are where a size rule is most easily wrong.
// A model with a size-edge shift ([DynoxideModel]) moves the edge expected
// of sut (runShiftedSizeEdge).
func runSizeEdge(t *testing.T, sut storeapi.Store, m ServerModel) {
	r := &runner{ref: lockcore.NewMemoryStore(), sut: lockcore.NewMemoryStore(), opts: DiffOptions{Model: m}.withDefaults(), prefix: "edge-" + randomHex(6)}
	fits := func(n int) bool {
		s := r.newStepper(0)
		var ref outcome
		for _, o := range sizeEdge(n) {
			var err error
			if ref, _, _, err = s.step(t.Context(), o); err != nil {
				t.Fatal(err)
			}
		}
		return ref.class == classOK
	}
	lo, hi := 0, storeapi.MaxItemBytes // fits(lo), !fits(hi)
	if !fits(lo) || fits(hi) {
		t.Fatalf("reference: a full answer with no reference fits %t, with a 400 KB one %t; want true, false", fits(lo), fits(hi))
	}
	for lo+1 < hi {
		if mid := (lo + hi) / 2; fits(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	r.sut = sut
	if m.sizeEdgeShift != 0 {
		runShiftedSizeEdge(t, r, lo, m)
		return
	}
	for _, n := range []int{lo, hi} {
		s := r.newStepper(0)
		for i, o := range sizeEdge(n) {
			ref, got, diffs, err := s.step(t.Context(), o)
			if err != nil {
				t.Fatalf("reference of %d bytes, step %d: %v", n, i+1, err)
			}
			if len(diffs) > 0 {
				t.Errorf("reference of %d bytes (the reference store's limit is %d), step %d:\nreference: %s\nstore under test: %s (%v)\n  %s",
					n, lo, i+1, ref.class, got.class, got.err, strings.Join(diffs, "\n  "))
			}
		}
	}
}

// runShiftedSizeEdge requires r's store under test to accept sizeEdge's
// release up to exactly refLimit - m.sizeEdgeShift bytes of reference, with
// the reference's answers, and to refuse one a byte longer, which the
// reference accepts, with ErrItemTooLarge.
func runShiftedSizeEdge(t *testing.T, r *runner, refLimit int, m ServerModel) {
	want := refLimit - m.sizeEdgeShift
	for _, n := range []int{want, want + 1} {
		s := r.newStepper(0)
		for i, o := range sizeEdge(n) {
			ref, got, diffs, err := s.step(t.Context(), o)
			if err != nil {
				t.Fatalf("reference of %d bytes, step %d: %v", n, i+1, err)
			}
			refused := n > want && o.kind == opRelease
			switch {
			case refused && (got.class != classError || !errors.Is(got.err, storeapi.ErrItemTooLarge)):
				t.Errorf("reference of %d bytes (limit: the reference store's %d, %s's by its model %d): store under test = %s (%v), want ErrItemTooLarge",
					n, refLimit, m.Name(), want, got.class, got.err)
			case !refused && len(diffs) > 0:
				t.Errorf("reference of %d bytes (limit: the reference store's %d, %s's by its model %d), step %d:\nreference: %s\nstore under test: %s (%v)\n  %s",
					n, refLimit, m.Name(), want, i+1, ref.class, got.class, got.err, strings.Join(diffs, "\n  "))
			}
		}
	}
}
