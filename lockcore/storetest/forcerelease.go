package storetest

import (
	"testing"

	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/lockcore/storeapi"
)

// testReleaseOverForceRelease checks that an operator's force-release
// (reason [storeapi.OperatorReleaseReason], as herdlock release writes it)
// is never overwritten at its revision by any other Failure release: not by
// the holder it stopped (a failure of its own, or the freeing of a possible
// ghost), and not by a holder's retry of a failure it published before the
// operator cleared it; a Success was refused before. The operator's own
// retry still succeeds.
func testReleaseOverForceRelease(t *testing.T, e *env) {
	k := e.key("k")
	held := mustAcquire(t, e.s, req(k, "holder", baseMs))
	forced := storeapi.ReleaseRequest{Key: k, Revision: "holder", NowMs: baseMs + 1,
		Result: lockcore.Failure, Failures: held.Failures, FailReason: storeapi.OperatorReleaseReason}
	op, err := e.s.Release(ctx(t), forced)
	if err != nil {
		t.Fatalf("Release(operator) = %v", err)
	}
	for _, tt := range []struct {
		call string
		req  storeapi.ReleaseRequest
	}{
		{"Release(holder's failure)", storeapi.ReleaseRequest{Key: k, Revision: "holder", NowMs: baseMs + 2, Result: lockcore.Failure,
			Failures: 1, NotBeforeMs: baseMs + 1000, FailReason: "lease_lost", FailRecentUntilMs: baseMs + 9000}},
		{"Release(holder's failure, no reason)", storeapi.ReleaseRequest{Key: k, Revision: "holder", NowMs: baseMs + 2, Result: lockcore.Failure}},
		{"Release(freeing a ghost)", storeapi.ReleaseRequest{Key: k, Revision: "holder", NowMs: baseMs + 2, Result: lockcore.Failure, KeepEpisode: true}},
		{"Release(freeing a ghost, the operator's reason)", storeapi.ReleaseRequest{Key: k, Revision: "holder", NowMs: baseMs + 2,
			Result: lockcore.Failure, KeepEpisode: true, FailReason: storeapi.OperatorReleaseReason}},
		{"Release(holder's success)", storeapi.ReleaseRequest{Key: k, Revision: "holder", NowMs: baseMs + 2, Result: lockcore.Success, ResultRef: "ref"}},
	} {
		_, err := e.s.Release(ctx(t), tt.req)
		wantCondition(t, tt.call, err, "release", &op)
		wantItem(t, "Get() after "+tt.call, mustGet(t, e.s, k), op)
	}
	again, err := e.s.Release(ctx(t), forced)
	if err != nil {
		t.Fatalf("Release(operator, retried) = %v, want success", err)
	}
	wantItem(t, "Release(operator, retried)", again, op)

	// The holder published a recent failure; the operator cleared it. The
	// holder's retry of its failure (its first attempt's answer lost) must
	// not reopen the episode the operator closed.
	k = e.key("cleared")
	mustAcquire(t, e.s, req(k, "holder", baseMs))
	failed := storeapi.ReleaseRequest{Key: k, Revision: "holder", NowMs: baseMs + 1, Result: lockcore.Failure,
		Failures: 2, NotBeforeMs: baseMs + 6000, FailReason: "upstream_503", FailRecentUntilMs: baseMs + 12000}
	if _, err := e.s.Release(ctx(t), failed); err != nil {
		t.Fatalf("Release(holder's failure) = %v", err)
	}
	clear := storeapi.ReleaseRequest{Key: k, Revision: "holder", NowMs: baseMs + 2, Result: lockcore.Failure,
		Failures: 2, FailReason: storeapi.OperatorReleaseReason}
	cleared, err := e.s.Release(ctx(t), clear)
	if err != nil {
		t.Fatalf("Release(operator clears the failure) = %v", err)
	}
	if cleared.FailReason != storeapi.OperatorReleaseReason || cleared.NotBeforeMs != 0 || cleared.FailRecentUntilMs != 0 {
		t.Errorf("Release(operator clears the failure) = reason %q, not-before %d, recent until %d; want %q, 0, 0",
			cleared.FailReason, cleared.NotBeforeMs, cleared.FailRecentUntilMs, storeapi.OperatorReleaseReason)
	}
	_, err = e.s.Release(ctx(t), failed)
	wantCondition(t, "Release(holder's failure, retried after the operator's)", err, "release", &cleared)
	wantItem(t, "Get() after the refused retry", mustGet(t, e.s, k), cleared)

	// A newcomer acquires over the operator's release. The holder's
	// failure release is still refused, not taken for the retry of a
	// release that was applied: the newcomer's item records the operator's
	// reason as the one of the release it replaced (PrevFailReason), so
	// the last release of the holder's revision was the operator's. A
	// success release is refused as before.
	next := mustAcquire(t, e.s, req(k, "newcomer", baseMs+3))
	if next.PrevFailReason != storeapi.OperatorReleaseReason {
		t.Errorf("Acquire(over the operator's release) = PrevFailReason %q, want %q", next.PrevFailReason, storeapi.OperatorReleaseReason)
	}
	_, err = e.s.Release(ctx(t), failed)
	wantCondition(t, "Release(holder's failure, after the operator's and a newcomer's acquire)", err, "release", &next)
	_, err = e.s.Release(ctx(t), storeapi.ReleaseRequest{Key: k, Revision: "holder", NowMs: baseMs + 4, Result: lockcore.Failure})
	wantCondition(t, "Release(holder's failure, no reason, after a newcomer)", err, "release", &next)
	wantItem(t, "Get() after the refused releases", mustGet(t, e.s, k), next)

	// The newcomer releases with a reason of its own: the holder's
	// failure releases are still refused, because the release the
	// newcomer's acquisition replaced was the operator's.
	ownFail := storeapi.ReleaseRequest{Key: k, Revision: "newcomer", NowMs: baseMs + 5, Result: lockcore.Failure,
		Failures: 3, FailReason: "upstream_500"}
	done, err := e.s.Release(ctx(t), ownFail)
	if err != nil {
		t.Fatalf("Release(newcomer's failure) = %v", err)
	}
	_, err = e.s.Release(ctx(t), failed)
	wantCondition(t, "Release(holder's failure, after the newcomer released with its own reason)", err, "release", &done)
	_, err = e.s.Release(ctx(t), storeapi.ReleaseRequest{Key: k, Revision: "holder", NowMs: baseMs + 6, Result: lockcore.Failure})
	wantCondition(t, "Release(holder's failure, no reason, after the newcomer's release)", err, "release", &done)
	wantItem(t, "Get() after the holder's refused releases", mustGet(t, e.s, k), done)
}
