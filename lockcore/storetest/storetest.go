package storetest

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/lockcore/storeapi"
)

// Run runs the conformance suite on the stores that newStore returns. It
// calls newStore once per subtest, with that subtest's t; newStore may return
// the same store every time, because every subtest uses keys of its own
// (unique per call of Run, so a table may outlive one run). newStore may
// call t.Skip for a subtest whose name it knows the server cannot pass; that
// is the only skip the suite allows, and each one must be documented.
//
// gaps names the known ways the store's server differs from DynamoDB that
// the suite models in its expectations (see [Gap]).
//
// Subtests that do not share state run in parallel.
func Run(t *testing.T, newStore func(t *testing.T) storeapi.Store, gaps ...Gap) {
	ignoresRemove := false
	for _, g := range gaps {
		if g == GapIgnoresRemove {
			ignoresRemove = true
		}
	}
	nonce := randomHex(6)
	tests := []struct {
		name string
		fn   func(t *testing.T, e *env)
	}{
		{"GetAbsent", testGetAbsent},
		{"AcquireAbsent", testAcquireAbsent},
		{"AcquireHeldRefused", testAcquireHeldRefused},
		{"AcquireReleased", testAcquireReleased},
		{"AcquireFreshSuccess", testAcquireFreshSuccess},
		{"AcquireFreshSuccessEveryBranch", testAcquireFreshSuccessEveryBranch},
		{"AcquireHeldBackFailure", testAcquireHeldBackFailure},
		{"AcquireKeepsFailureEpisode", testAcquireKeepsFailureEpisode},
		{"AcquireResetsItem", testAcquireResetsItem},
		{"AcquireWallClock", testAcquireWallClock},
		{"AcquireObservation", testAcquireObservation},
		{"AcquireOwnRetriedWrite", testAcquireOwnRetriedWrite},
		{"ConditionErrorAbsentItem", testConditionErrorAbsentItem},
		{"FenceMonotonic", testFenceMonotonic},
		{"FenceBaseSeedsFreshItem", testFenceBaseSeedsFreshItem},
		{"Renew", testRenew},
		{"RenewRefused", testRenewRefused},
		{"RenewAfterForceRelease", testRenewAfterForceRelease},
		{"RenewNeverShortens", testRenewNeverShortens},
		{"Release", testRelease},
		{"ReleaseRetry", testReleaseRetry},
		{"ReleaseRetryKeepsPublicationTime", testReleaseRetryKeepsPublicationTime},
		{"ReleaseRefused", testReleaseRefused},
		{"ReleaseRecognisesOwnPublication", testReleaseRecognisesOwnPublication},
		{"ReleaseRecognisedAfterFreedWrites", testReleaseRecognisedAfterFreedWrites},
		{"ReleaseSuccessEndsEpisode", testReleaseSuccessEndsEpisode},
		{"ReleaseKeepEpisode", testReleaseKeepEpisode},
		{"HoldHistory", testHoldHistory},
		{"Announcements", testAnnouncements},
		{"ReleaseOverForceRelease", testReleaseOverForceRelease},
		{"ReleaseAnswerRules", testReleaseAnswerRules},
		{"ItemTooLarge", testItemTooLarge},
		{"InvalidUTF8Refused", testInvalidUTF8Refused},
		{"ConcurrentAcquirers", testConcurrentAcquirers},
		{"KeyIsolation", testKeyIsolation},
		{"IdempotencyRecordLife", testIdempotencyRecordLife},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := newStore(t)
			if s == nil {
				t.Fatal("newStore() = nil")
			}
			tt.fn(t, &env{s: s, prefix: "storetest-" + nonce + "/" + tt.name, ignoresRemove: ignoresRemove})
		})
	}
}

// baseMs is the wall-clock time of the requests (2026-01-01T00:00:00Z).
// Stores must not read a clock of their own, so any fixed value works.
const baseMs int64 = 1767225600000

const (
	lease      = 10 * time.Second
	leaseMs    = int64(lease / time.Millisecond)
	maxHoldMs  = 60_000
	allowance  = time.Second
	account    = "act:123456789012/app:7"
	ttlSeconds = baseMs/1000 + 86_400
)

// Gap is a known way a server differs from DynamoDB that [Run] models in
// its expectations, so that the subtests concerned still run there.
type Gap int

const (
	// GapIgnoresRemove: UpdateItem ignores REMOVE when the expression also
	// has SET (minidyn v0.8.2), so an acquisition keeps the previous hold's
	// Result, ResultRef, ResultFence, ReleasedAtMs and Answer, and a TTL
	// the request does not set.
	GapIgnoresRemove Gap = iota + 1
)

// env is one subtest's store and key namespace.
type env struct {
	s             storeapi.Store
	prefix        string
	ignoresRemove bool // GapIgnoresRemove
}

// key returns a key of this subtest; different ids give different keys.
func (e *env) key(id string) lockcore.Key {
	return lockcore.Key{Group: e.prefix, ID: id}
}

// req returns a plain acquire request for key k with revision rev, made at
// nowMs: lease until nowMs + lease, hard maximum nowMs + 60 s, no wall-clock
// or clock-free branch.
func req(k lockcore.Key, rev string, nowMs int64) storeapi.AcquireRequest {
	return storeapi.AcquireRequest{
		Key:           k,
		Holder:        "owner-" + rev,
		Revision:      rev,
		Lease:         lease,
		NowMs:         nowMs,
		LeaseUntilMs:  nowMs + leaseMs,
		ExpiresAtMs:   nowMs + maxHoldMs,
		RecordAccount: account,
		TTL:           ttlSeconds,
		FenceBase:     0,
	}
}

// writtenOver is the item a successful Acquire of r over prev must produce:
// the next fence, prev's revision, result and failure reason as the
// previous ones, prev's record of the last publication and failure episode
// kept; and, on a server with GapIgnoresRemove, what the
// acquisition should have removed.
func (e *env) writtenOver(r storeapi.AcquireRequest, prev storeapi.Item) storeapi.Item {
	it := written(r, prev.Fence+1)
	it.PrevRevision, it.PrevResult, it.PrevFailReason = prev.Revision, prev.Result, prev.FailReason
	it.PublishedRevision, it.PublishedResult = prev.PublishedRevision, prev.PublishedResult
	it.Failures, it.NotBeforeMs = prev.Failures, prev.NotBeforeMs
	it.FailReason, it.FailRecentUntilMs = prev.FailReason, prev.FailRecentUntilMs
	it.HoldMeanMs, it.HoldDevMs = prev.HoldMeanMs, prev.HoldDevMs
	if e.ignoresRemove {
		it.Result, it.ResultRef, it.ResultFence, it.ReleasedAtMs = prev.Result, prev.ResultRef, prev.ResultFence, prev.ReleasedAtMs
		it.Answer = prev.Answer
		if r.TTL == 0 {
			it.TTL = prev.TTL
		}
	}
	return it
}

// written is the item a successful Acquire of r must produce on an absent
// item, with the given fence.
func written(r storeapi.AcquireRequest, fence int64) storeapi.Item {
	return storeapi.Item{
		Key:           r.Key,
		Holder:        r.Holder,
		Revision:      r.Revision,
		Fence:         fence,
		Lease:         r.Lease,
		HeartbeatAtMs: r.NowMs,
		AcquiredAtMs:  r.NowMs,
		LeaseUntilMs:  r.LeaseUntilMs,
		ExpiresAtMs:   r.ExpiresAtMs,
		RecordAccount: r.RecordAccount,
		TTL:           r.TTL,
	}
}

func ctx(t *testing.T) context.Context { return t.Context() }

// mustAcquire acquires or fails the test.
func mustAcquire(t *testing.T, s storeapi.Store, r storeapi.AcquireRequest) storeapi.Item {
	t.Helper()
	it, err := s.Acquire(ctx(t), r)
	if err != nil {
		t.Fatalf("Acquire(%s, rev %q) = %v, want success", r.Key.ID, r.Revision, err)
	}
	return it
}

func mustRelease(t *testing.T, s storeapi.Store, k lockcore.Key, rev string, res lockcore.Result) storeapi.Item {
	t.Helper()
	it, err := s.Release(ctx(t), storeapi.ReleaseRequest{Key: k, Revision: rev, NowMs: baseMs + 1, Result: res, ResultRef: "ref-" + rev})
	if err != nil {
		t.Fatalf("Release(%s, rev %q) = %v, want success", k.ID, rev, err)
	}
	return it
}

func mustGet(t *testing.T, s storeapi.Store, k lockcore.Key) storeapi.Item {
	t.Helper()
	it, found, err := s.Get(ctx(t), k)
	if err != nil || !found {
		t.Fatalf("Get(%s) = found %t, %v, want found", k.ID, found, err)
	}
	return it
}

// wantCondition checks that err is a *ConditionError for op whose Current is
// want (nil: no item).
func wantCondition(t *testing.T, call string, err error, op string, want *storeapi.Item) {
	t.Helper()
	var ce *storeapi.ConditionError
	if !errors.As(err, &ce) {
		t.Fatalf("%s = %v, want *storeapi.ConditionError", call, err)
	}
	if !errors.Is(err, storeapi.ErrConditionFailed) {
		t.Errorf("%s: errors.Is(err, ErrConditionFailed) = false, want true", call)
	}
	if ce.Op != op {
		t.Errorf("%s: ConditionError.Op = %q, want %q", call, ce.Op, op)
	}
	switch {
	case want == nil && ce.Current != nil:
		t.Errorf("%s: ConditionError.Current = %+v, want nil (no item)", call, *ce.Current)
	case want != nil && ce.Current == nil:
		t.Errorf("%s: ConditionError.Current = nil, want %+v", call, *want)
	case want != nil && !ce.Current.Equal(*want):
		t.Errorf("%s: ConditionError.Current =\n  %+v\nwant\n  %+v", call, *ce.Current, *want)
	}
}

func wantItem(t *testing.T, call string, got, want storeapi.Item) {
	t.Helper()
	if !got.Equal(want) {
		t.Errorf("%s =\n  %+v\nwant\n  %+v", call, got, want)
	}
}

func testGetAbsent(t *testing.T, e *env) {
	it, found, err := e.s.Get(ctx(t), e.key("absent"))
	if err != nil || found || !it.Equal(storeapi.Item{}) {
		t.Fatalf("Get(absent) = %+v, %t, %v, want zero item, false, nil", it, found, err)
	}
}

func testAcquireAbsent(t *testing.T, e *env) {
	k := e.key("k")
	r := req(k, "rev-1", baseMs)
	r.FenceBase = 7
	got := mustAcquire(t, e.s, r)
	want := written(r, 8)
	wantItem(t, "Acquire(absent)", got, want)
	wantItem(t, "Get() after Acquire", mustGet(t, e.s, k), want)

	// TTL 0 stores no TTL, and an item without one reads back as 0.
	k2 := e.key("no-ttl")
	r2 := req(k2, "rev-2", baseMs)
	r2.TTL = 0
	r2.RecordAccount = ""
	got = mustAcquire(t, e.s, r2)
	wantItem(t, "Acquire(absent, no TTL, no account)", got, written(r2, 1))
	wantItem(t, "Get() after Acquire without TTL", mustGet(t, e.s, k2), written(r2, 1))
}

func testAcquireHeldRefused(t *testing.T, e *env) {
	k := e.key("k")
	held := mustAcquire(t, e.s, req(k, "holder", baseMs))

	// A contender long after the lease and hard maximum, but with neither
	// the wall-clock nor the clock-free branch enabled, is refused.
	late := req(k, "contender", baseMs+10*maxHoldMs)
	_, err := e.s.Acquire(ctx(t), late)
	wantCondition(t, "Acquire(held)", err, "acquire", &held)
	wantItem(t, "Get() after refused Acquire", mustGet(t, e.s, k), held)
}

func testAcquireReleased(t *testing.T, e *env) {
	for _, res := range []lockcore.Result{lockcore.Success, lockcore.Failure} {
		k := e.key(string(res))
		first := mustAcquire(t, e.s, req(k, "first", baseMs))
		mustRelease(t, e.s, k, "first", res)
		got := mustAcquire(t, e.s, req(k, "second", baseMs+5))
		if got.Revision != "second" || got.Fence != first.Fence+1 || got.Released {
			t.Errorf("Acquire(released with %s) = revision %q, fence %d, released %t, want %q, %d, false",
				res, got.Revision, got.Fence, got.Released, "second", first.Fence+1)
		}
	}
}

// testAcquireFreshSuccess checks FreshSuccessSinceMs: an item released
// with Success at or after it is refused, one released earlier, or released
// with Failure, is acquired.
func testAcquireFreshSuccess(t *testing.T, e *env) {
	tests := []struct {
		name       string
		result     lockcore.Result
		freshSince int64 // the release happens at baseMs + 1
		acquired   bool
	}{
		{"success released at the bound", lockcore.Success, baseMs + 1, false},
		{"success released after the bound", lockcore.Success, baseMs, false},
		{"success released before the bound", lockcore.Success, baseMs + 2, true},
		{"failure released after the bound", lockcore.Failure, baseMs, true},
	}
	for _, tt := range tests {
		k := e.key(tt.name)
		mustAcquire(t, e.s, req(k, "first", baseMs))
		released := mustRelease(t, e.s, k, "first", tt.result)
		r := req(k, "second", baseMs+5)
		r.FreshSuccessSinceMs = tt.freshSince
		got, err := e.s.Acquire(ctx(t), r)
		if !tt.acquired {
			wantCondition(t, "Acquire("+tt.name+")", err, "acquire", &released)
			continue
		}
		if err != nil || got.Revision != "second" {
			t.Errorf("Acquire(%s) = revision %q, %v, want acquired", tt.name, got.Revision, err)
		}
	}
}

// testAcquireResetsItem checks that an acquisition leaves nothing of the
// previous hold but its revision, result and failure episode: Beat, Result,
// ResultRef, ResultFence, ReleasedAtMs, Answer and a TTL the new request
// does not set are all gone.
func testAcquireResetsItem(t *testing.T, e *env) {
	for _, res := range []lockcore.Result{lockcore.Success, lockcore.Failure} {
		k := e.key(string(res))
		mustAcquire(t, e.s, req(k, "first", baseMs))
		if _, err := e.s.Renew(ctx(t), storeapi.RenewRequest{Key: k, Revision: "first", NowMs: baseMs + 1, LeaseUntilMs: baseMs + 1 + leaseMs}); err != nil {
			t.Fatalf("Renew() = %v", err)
		}
		rr := storeapi.ReleaseRequest{Key: k, Revision: "first", NowMs: baseMs + 2, Result: res, ResultRef: "ref"}
		if res == lockcore.Success {
			rr.Answer = []byte("the answer")
		} else {
			rr.Failures, rr.NotBeforeMs, rr.FailReason, rr.FailRecentUntilMs = 1, baseMs+3, "upstream_429", baseMs+4
		}
		prev, err := e.s.Release(ctx(t), rr)
		if err != nil {
			t.Fatalf("Release(%s) = %v", res, err)
		}

		r := req(k, "second", baseMs+5)
		r.TTL = 0
		got := mustAcquire(t, e.s, r)
		wantItem(t, fmt.Sprintf("Acquire(released with %s)", res), got, e.writtenOver(r, prev))
		wantItem(t, "Get() after re-acquire", mustGet(t, e.s, k), e.writtenOver(r, prev))
	}
}

// testAcquireFreshSuccessEveryBranch checks that a fresh success holds on
// every branch of the condition: a released item whose lease has lapsed by
// the wall clock, or whose revision and beat a waiter observed, is still
// refused while its success is fresh, and acquired once it is not.
func testAcquireFreshSuccessEveryBranch(t *testing.T, e *env) {
	const now = baseMs + 100_000 // long after the lease and the hard maximum
	tests := []struct {
		name       string
		wall       bool
		observe    bool
		freshSince int64 // the release happens at baseMs + 1
		acquired   bool
	}{
		{"wall clock, fresh", true, false, baseMs, false},
		{"clock-free, fresh", false, true, baseMs, false},
		{"both branches, fresh", true, true, baseMs + 1, false},
		{"wall clock, stale", true, false, baseMs + 2, true},
		{"clock-free, stale", false, true, baseMs + 2, true},
	}
	for i, tt := range tests {
		k := e.key(fmt.Sprintf("case-%d", i))
		mustAcquire(t, e.s, req(k, "first", baseMs))
		released := mustRelease(t, e.s, k, "first", lockcore.Success)
		r := req(k, "second", now)
		r.FreshSuccessSinceMs = tt.freshSince
		r.UseWallClock, r.ClockAllowance = tt.wall, allowance
		if tt.observe {
			r.Observed = &storeapi.Observation{Revision: "first", Beat: 0}
		}
		got, err := e.s.Acquire(ctx(t), r)
		e.wantAcquireOutcome(t, fmt.Sprintf("Acquire(%s)", tt.name), got, err, tt.acquired, r, released)
	}
}

// testAcquireHeldBackFailure checks guard (C): a recent failure is not
// acquired before its not-before time, on every branch of the condition,
// whatever its attempt count (the failing holder writes an exhausted
// episode's hold-back as the not-before); at or after it, an old failure,
// or a request without MaxAttempts, is acquired.
func testAcquireHeldBackFailure(t *testing.T, e *env) {
	const now = baseMs + 10_000
	tests := []struct {
		name        string
		failures    int64
		notBefore   int64
		recentUntil int64
		maxAttempts int64
		wall        bool // also lapsed by the wall clock
		observe     bool // also observed unchanged
		acquired    bool
	}{
		{"before not-before", 1, now + 1, now + 5000, 2, false, false, false},
		{"before not-before, wall clock", 1, now + 1, now + 5000, 2, true, false, false},
		{"before not-before, observed", 1, now + 1, now + 5000, 2, false, true, false},
		{"at not-before", 1, now, now + 5000, 2, false, false, true},
		{"after not-before", 1, now - 1, now + 5000, 2, true, true, true},
		{"attempts reached, no not-before", 2, 0, now + 1, 2, false, false, true},
		{"attempts reached, hold-back", 2, now + 1, now + 6001, 2, true, true, false},
		{"attempts over the bound, hold-back over", 3, now - 1, now + 1, 2, false, false, true},
		{"attempts over the bound, hold-back", 5, now + 6000, now + 12_000, 1, false, false, false},
		{"before not-before, no longer recent", 1, now + 1, now, 2, false, false, true},
		{"guard off", 5, now + 1, now + 5000, 0, false, false, true},
	}
	for i, tt := range tests {
		k := e.key(fmt.Sprintf("case-%d", i))
		mustAcquire(t, e.s, req(k, "failed", baseMs))
		held, err := e.s.Release(ctx(t), storeapi.ReleaseRequest{Key: k, Revision: "failed", NowMs: baseMs + 1, Result: lockcore.Failure,
			Failures: tt.failures, NotBeforeMs: tt.notBefore, FailReason: "upstream_429", FailRecentUntilMs: tt.recentUntil})
		if err != nil {
			t.Fatalf("Release(failure) = %v", err)
		}
		r := req(k, "next", now)
		r.MaxAttempts = tt.maxAttempts
		r.UseWallClock, r.ClockAllowance = tt.wall, allowance
		if tt.observe {
			r.Observed = &storeapi.Observation{Revision: "failed", Beat: 0}
		}
		got, err := e.s.Acquire(ctx(t), r)
		e.wantAcquireOutcome(t, fmt.Sprintf("Acquire(%s)", tt.name), got, err, tt.acquired, r, held)
	}

	// A holder that crashed (never released) is taken over as before,
	// whatever failure its episode had before it.
	k := e.key("crashed")
	mustAcquire(t, e.s, req(k, "failed", baseMs))
	if _, err := e.s.Release(ctx(t), storeapi.ReleaseRequest{Key: k, Revision: "failed", NowMs: baseMs + 1, Result: lockcore.Failure,
		Failures: 1, FailReason: "upstream_429", FailRecentUntilMs: now + 60_000}); err != nil {
		t.Fatalf("Release(failure) = %v", err)
	}
	crashed := mustAcquire(t, e.s, req(k, "crashed", baseMs+2))
	r := req(k, "taker", now)
	r.MaxAttempts = 1
	r.Observed = &storeapi.Observation{Revision: "crashed", Beat: 0}
	got, err := e.s.Acquire(ctx(t), r)
	if err != nil || got.Revision != "taker" || got.Fence != crashed.Fence+1 || got.Failures != 1 {
		t.Errorf("Acquire(over a crashed holder of a failing episode) = revision %q, fence %d, failures %d, %v; want %q, %d, 1, nil",
			got.Revision, got.Fence, got.Failures, err, "taker", crashed.Fence+1)
	}
}

// testReleaseKeepEpisode checks a Failure release with KeepEpisode: it
// frees the hold and leaves the item's failure episode as it was, whatever
// the request's own episode fields say; a retry of it succeeds too. As the
// freeing of a write nobody held (Unheld), it also leaves the record of
// the last publication.
func testReleaseKeepEpisode(t *testing.T, e *env) {
	k := e.key("k")
	mustAcquire(t, e.s, req(k, "failed", baseMs))
	if _, err := e.s.Release(ctx(t), storeapi.ReleaseRequest{Key: k, Revision: "failed", NowMs: baseMs + 1, Result: lockcore.Failure,
		Failures: 2, NotBeforeMs: baseMs + 2, FailReason: "upstream_503", FailRecentUntilMs: baseMs + 9000}); err != nil {
		t.Fatalf("Release(failure) = %v", err)
	}
	ghost := mustAcquire(t, e.s, req(k, "ghost", baseMs+3))
	free := storeapi.ReleaseRequest{Key: k, Revision: "ghost", NowMs: baseMs + 4, Result: lockcore.Failure, KeepEpisode: true, Unheld: true,
		Failures: 7, NotBeforeMs: baseMs + 99, FailReason: "ignored", FailRecentUntilMs: baseMs + 99}
	for _, call := range []string{"Release(keep episode)", "Release(keep episode) again"} {
		got, err := e.s.Release(ctx(t), free)
		if err != nil {
			t.Fatalf("%s = %v", call, err)
		}
		want := ghost
		want.Released, want.ReleasedAtMs, want.Result, want.ResultFence = true, baseMs+4, lockcore.Failure, ghost.Fence
		wantItem(t, call, got, want)
		wantItem(t, call+" then Get", mustGet(t, e.s, k), want)
		if got.Failures != 2 || got.NotBeforeMs != baseMs+2 || got.FailReason != "upstream_503" || got.FailRecentUntilMs != baseMs+9000 {
			t.Errorf("%s: episode = %d, %d, %q, %d; want the item's, 2, %d, upstream_503, %d", call,
				got.Failures, got.NotBeforeMs, got.FailReason, got.FailRecentUntilMs, baseMs+2, baseMs+9000)
		}
	}
}

// testAcquireKeepsFailureEpisode checks the fields an acquisition takes from
// the item it replaces: the previous revision and result, and the failure
// episode, which the new holder needs to count its attempt.
func testAcquireKeepsFailureEpisode(t *testing.T, e *env) {
	k := e.key("k")
	first := mustAcquire(t, e.s, req(k, "first", baseMs))
	if first.PrevRevision != "" || first.PrevResult != "" || first.Failures != 0 {
		t.Errorf("Acquire(absent) = prev %q/%q, failures %d, want none", first.PrevRevision, first.PrevResult, first.Failures)
	}
	if _, err := e.s.Release(ctx(t), storeapi.ReleaseRequest{Key: k, Revision: "first", NowMs: baseMs + 1, Result: lockcore.Failure,
		Failures: 1, NotBeforeMs: baseMs + 2, FailReason: "timeout", FailRecentUntilMs: baseMs + 3}); err != nil {
		t.Fatalf("Release(failure) = %v", err)
	}
	second := mustAcquire(t, e.s, req(k, "second", baseMs+5))
	// A take-over of an unreleased holder: its revision, no result.
	r := req(k, "third", baseMs+6)
	r.Observed = &storeapi.Observation{Revision: "second", Beat: 0}
	third := mustAcquire(t, e.s, r)
	var unreleased lockcore.Result // the second holder's item has no result...
	if e.ignoresRemove {
		unreleased = lockcore.Failure // ...unless the server kept the first's
	}
	tests := []struct {
		name string
		it   storeapi.Item
		rev  string
		res  lockcore.Result
	}{
		{"after a released failure", second, "first", lockcore.Failure},
		{"after an unreleased holder", third, "second", unreleased},
	}
	for _, tt := range tests {
		if tt.it.PrevRevision != tt.rev || tt.it.PrevResult != tt.res {
			t.Errorf("Acquire(%s): PrevRevision %q PrevResult %q, want %q %q", tt.name, tt.it.PrevRevision, tt.it.PrevResult, tt.rev, tt.res)
		}
		if tt.it.Failures != 1 || tt.it.NotBeforeMs != baseMs+2 || tt.it.FailReason != "timeout" || tt.it.FailRecentUntilMs != baseMs+3 {
			t.Errorf("Acquire(%s): failure episode %d, %d, %q, %d, want kept: 1, %d, %q, %d", tt.name,
				tt.it.Failures, tt.it.NotBeforeMs, tt.it.FailReason, tt.it.FailRecentUntilMs, baseMs+2, "timeout", baseMs+3)
		}
		if tt.it.Released || tt.it.Answer != nil {
			t.Errorf("Acquire(%s): released %t, answer %q, want neither", tt.name, tt.it.Released, tt.it.Answer)
		}
	}
}

func testAcquireWallClock(t *testing.T, e *env) {
	const now = baseMs + 100_000
	eps := allowance.Milliseconds()
	tests := []struct {
		name           string
		leaseUntil     int64
		expiresAt      int64
		useWall        bool
		wantAcquired   bool
		holderAcquired bool
	}{
		{"expired, wall clock on", now + 50_000, now - eps - 1, true, true, true},
		{"expired, wall clock off", now + 50_000, now - eps - 1, false, false, true},
		{"expired within allowance", now + 50_000, now - eps, true, false, true},
		{"lease lapsed, wall clock on", now - eps - 1, now + 50_000, true, true, true},
		{"lease lapsed, wall clock off", now - eps - 1, now + 50_000, false, false, true},
		{"lease lapsed within allowance", now - eps, now + 50_000, true, false, true},
		{"both lapsed within allowance", now - eps, now - eps, true, false, true},
		{"live, wall clock on", now + 1, now + 50_000, true, false, true},
	}
	for i, tt := range tests {
		k := e.key(fmt.Sprintf("case-%d", i))
		hr := req(k, "holder", baseMs)
		hr.LeaseUntilMs, hr.ExpiresAtMs = tt.leaseUntil, tt.expiresAt
		held := mustAcquire(t, e.s, hr)

		cr := req(k, "contender", now)
		cr.UseWallClock = tt.useWall
		cr.ClockAllowance = allowance
		got, err := e.s.Acquire(ctx(t), cr)
		e.wantAcquireOutcome(t, fmt.Sprintf("Acquire(%s)", tt.name), got, err, tt.wantAcquired, cr, held)
	}
}

// wantAcquireOutcome checks that Acquire(cr) over held either wrote the
// contender's item with the next fence (acquired) or failed its condition
// with held as the current item.
func (e *env) wantAcquireOutcome(t *testing.T, call string, got storeapi.Item, err error, acquired bool, cr storeapi.AcquireRequest, held storeapi.Item) {
	t.Helper()
	if !acquired {
		wantCondition(t, call, err, "acquire", &held)
		return
	}
	if err != nil {
		t.Errorf("%s = %v, want success", call, err)
		return
	}
	wantItem(t, call, got, e.writtenOver(cr, held))
}

func testAcquireObservation(t *testing.T, e *env) {
	renew := func(k lockcore.Key, rev string) storeapi.Item {
		t.Helper()
		it, err := e.s.Renew(ctx(t), storeapi.RenewRequest{Key: k, Revision: rev, NowMs: baseMs + 10, LeaseUntilMs: baseMs + 10 + leaseMs})
		if err != nil {
			t.Fatalf("Renew() = %v", err)
		}
		return it
	}
	tests := []struct {
		name     string
		renewals int
		observed storeapi.Observation
		want     bool
	}{
		{"match", 0, storeapi.Observation{Revision: "holder", Beat: 0}, true},
		{"match after renewals", 2, storeapi.Observation{Revision: "holder", Beat: 2}, true},
		{"beat moved on", 1, storeapi.Observation{Revision: "holder", Beat: 0}, false},
		{"beat ahead", 0, storeapi.Observation{Revision: "holder", Beat: 1}, false},
		{"other revision", 0, storeapi.Observation{Revision: "someone-else", Beat: 0}, false},
	}
	for i, tt := range tests {
		k := e.key(fmt.Sprintf("case-%d", i))
		held := mustAcquire(t, e.s, req(k, "holder", baseMs))
		for range tt.renewals {
			held = renew(k, "holder")
		}
		// The wall clock says the lease is live; only the observation can
		// let the contender in.
		cr := req(k, "contender", baseMs+20)
		cr.UseWallClock = true
		cr.ClockAllowance = allowance
		obs := tt.observed
		cr.Observed = &obs
		got, err := e.s.Acquire(ctx(t), cr)
		e.wantAcquireOutcome(t, fmt.Sprintf("Acquire(observation %s)", tt.name), got, err, tt.want, cr, held)
	}
}

func testAcquireOwnRetriedWrite(t *testing.T, e *env) {
	k := e.key("k")
	r := req(k, "mine", baseMs)
	first := mustAcquire(t, e.s, r)

	// The same request again, as an SDK retry after a lost response sends
	// it: the condition fails on our own item, which is success, and the
	// fence is not issued twice.
	again, err := e.s.Acquire(ctx(t), r)
	if err != nil {
		t.Fatalf("Acquire(retry of applied write) = %v, want nil error", err)
	}
	wantItem(t, "Acquire(retry of applied write)", again, first)

	// After a renewal too (the item moved on, but it is still ours).
	renewed, err := e.s.Renew(ctx(t), storeapi.RenewRequest{Key: k, Revision: "mine", NowMs: baseMs + 1, LeaseUntilMs: baseMs + 1 + leaseMs})
	if err != nil {
		t.Fatalf("Renew() = %v", err)
	}
	again, err = e.s.Acquire(ctx(t), r)
	if err != nil {
		t.Fatalf("Acquire(retry after renewal) = %v, want nil error", err)
	}
	wantItem(t, "Acquire(retry after renewal)", again, renewed)

	// Someone else's retry is still refused.
	_, err = e.s.Acquire(ctx(t), req(k, "theirs", baseMs))
	wantCondition(t, "Acquire(other revision)", err, "acquire", &renewed)

	// Once the item is released (here by an operator), a late copy of our
	// acquire, delivered again by the network, must not acquire it a
	// second time: a revision is acquired at most once.
	opRel, err := e.s.Release(ctx(t), storeapi.ReleaseRequest{Key: k, Revision: "mine", NowMs: baseMs + 2, Result: lockcore.Failure,
		FailReason: storeapi.OperatorReleaseReason})
	if err != nil {
		t.Fatalf("Release(operator) = %v", err)
	}
	late := r
	late.NowMs = baseMs + 3
	_, err = e.s.Acquire(ctx(t), late)
	wantCondition(t, "Acquire(late copy after a release)", err, "acquire", &opRel)
	late.UseWallClock, late.ClockAllowance = true, time.Second
	late.Observed = &storeapi.Observation{Revision: "mine", Beat: opRel.Beat}
	_, err = e.s.Acquire(ctx(t), late)
	wantCondition(t, "Acquire(late copy after a release, every branch)", err, "acquire", &opRel)
	wantItem(t, "Get() after late copies", mustGet(t, e.s, k), opRel)

	// Another holder acquires and releases the key; our revision is now
	// its PrevRevision. A late copy of our acquire (the store's own retry
	// of a write whose first copy was applied) must not bring the
	// operator's released revision back.
	next := mustAcquire(t, e.s, req(k, "next", baseMs+4))
	done, err := e.s.Release(ctx(t), storeapi.ReleaseRequest{Key: k, Revision: "next", NowMs: baseMs + 5, Result: lockcore.Success, ResultRef: "r"})
	if err != nil {
		t.Fatalf("Release(next) = %v", err)
	}
	if next.PrevRevision != "mine" || done.PrevRevision != "mine" {
		t.Fatalf("PrevRevision = %q, %q after the next holder, want %q", next.PrevRevision, done.PrevRevision, "mine")
	}
	late = r
	late.NowMs = baseMs + 6
	_, err = e.s.Acquire(ctx(t), late)
	wantCondition(t, "Acquire(late copy after the next holder)", err, "acquire", &done)
	wantItem(t, "Get() after the late copy", mustGet(t, e.s, k), done)
	// Any other revision acquires the released key.
	mustAcquire(t, e.s, req(k, "later", baseMs+7))
}

func testConditionErrorAbsentItem(t *testing.T, e *env) {
	k := e.key("absent")
	_, err := e.s.Renew(ctx(t), storeapi.RenewRequest{Key: k, Revision: "r", NowMs: baseMs, LeaseUntilMs: baseMs + leaseMs})
	wantCondition(t, "Renew(absent)", err, "renew", nil)
	_, err = e.s.Release(ctx(t), storeapi.ReleaseRequest{Key: k, Revision: "r", NowMs: baseMs, Result: lockcore.Success, ResultRef: "x"})
	wantCondition(t, "Release(absent)", err, "release", nil)
	// None of them may create the item.
	if _, found, err := e.s.Get(ctx(t), k); err != nil || found {
		t.Fatalf("Get() after refused writes on an absent item = found %t, %v, want not found", found, err)
	}
}

func testFenceMonotonic(t *testing.T, e *env) {
	k := e.key("k")
	var fences []int64
	add := func(it storeapi.Item) { fences = append(fences, it.Fence) }

	add(mustAcquire(t, e.s, req(k, "r0", baseMs)))
	// Each way in increments the fence by exactly one, whatever FenceBase
	// the request carries once the item exists.
	for i := 1; i <= 3; i++ {
		mustRelease(t, e.s, k, fmt.Sprintf("r%d", i-1), lockcore.Failure)
		r := req(k, fmt.Sprintf("r%d", i), baseMs)
		r.FenceBase = int64(i) * 1_000_000 // ignored: the item has a fence
		add(mustAcquire(t, e.s, r))
	}
	// Take-over on the wall clock.
	wr := req(k, "r4", baseMs+maxHoldMs+allowance.Milliseconds()+1)
	wr.UseWallClock, wr.ClockAllowance = true, allowance
	add(mustAcquire(t, e.s, wr))
	// Take-over on an observation.
	or := req(k, "r5", baseMs)
	or.Observed = &storeapi.Observation{Revision: "r4", Beat: 0}
	add(mustAcquire(t, e.s, or))
	// A refused acquire issues no fence.
	if _, err := e.s.Acquire(ctx(t), req(k, "refused", baseMs)); err == nil {
		t.Fatalf("Acquire(held) = nil error, want condition failure")
	}
	mustRelease(t, e.s, k, "r5", lockcore.Success)
	add(mustAcquire(t, e.s, req(k, "r6", baseMs)))

	for i, f := range fences {
		if want := int64(i + 1); f != want {
			t.Fatalf("fences = %v, want 1, 2, 3, ... (fence %d is %d)", fences, i, f)
		}
	}
}

func testFenceBaseSeedsFreshItem(t *testing.T, e *env) {
	// A TTL deletion leaves no item and so no fence. The store cannot
	// delete, so the deleted item is simulated by a fresh key: what matters
	// is that a fresh item's fence is FenceBase + 1, so a time-derived base
	// keeps fences rising across a deletion.
	old := e.key("before-delete")
	mustAcquire(t, e.s, req(old, "a", baseMs))
	mustRelease(t, e.s, old, "a", lockcore.Success)
	r := req(old, "b", baseMs)
	oldFence := mustAcquire(t, e.s, r).Fence

	recreated := e.key("after-delete")
	r2 := req(recreated, "c", baseMs+1000)
	r2.FenceBase = (baseMs + 1000) * 1000 // docs/protocol.md, Acquire: nowMs·1000
	got := mustAcquire(t, e.s, r2)
	if got.Fence != r2.FenceBase+1 || got.Fence <= oldFence {
		t.Fatalf("Acquire(fresh key, FenceBase %d).Fence = %d, want %d (above the deleted item's %d)",
			r2.FenceBase, got.Fence, r2.FenceBase+1, oldFence)
	}
	mustRelease(t, e.s, recreated, "c", lockcore.Failure)
	r3 := req(recreated, "d", baseMs+2000)
	r3.FenceBase = 1 // lower than the stored fence: ignored
	if got3 := mustAcquire(t, e.s, r3); got3.Fence != got.Fence+1 {
		t.Fatalf("Acquire(existing, lower FenceBase).Fence = %d, want %d", got3.Fence, got.Fence+1)
	}
}

func testRenew(t *testing.T, e *env) {
	k := e.key("k")
	held := mustAcquire(t, e.s, req(k, "holder", baseMs))
	want := held
	for i := 1; i <= 3; i++ {
		rr := storeapi.RenewRequest{Key: k, Revision: "holder", NowMs: baseMs + int64(i)*3000, LeaseUntilMs: baseMs + int64(i)*3000 + leaseMs}
		got, err := e.s.Renew(ctx(t), rr)
		if err != nil {
			t.Fatalf("Renew() #%d = %v", i, err)
		}
		want.Beat = int64(i)
		want.HeartbeatAtMs = rr.NowMs
		want.LeaseUntilMs = rr.LeaseUntilMs
		wantItem(t, fmt.Sprintf("Renew() #%d", i), got, want)
	}
	wantItem(t, "Get() after renewals", mustGet(t, e.s, k), want)
}

func testRenewRefused(t *testing.T, e *env) {
	k := e.key("k")
	held := mustAcquire(t, e.s, req(k, "holder", baseMs))
	rr := storeapi.RenewRequest{Key: k, Revision: "other", NowMs: baseMs + 1, LeaseUntilMs: baseMs + 1 + leaseMs}
	_, err := e.s.Renew(ctx(t), rr)
	wantCondition(t, "Renew(wrong revision)", err, "renew", &held)

	released := mustRelease(t, e.s, k, "holder", lockcore.Success)
	rr.Revision = "holder"
	_, err = e.s.Renew(ctx(t), rr)
	wantCondition(t, "Renew(released)", err, "renew", &released)

	// After a take-over, the old holder's renewal is refused.
	next := mustAcquire(t, e.s, req(k, "successor", baseMs+2))
	_, err = e.s.Renew(ctx(t), rr)
	wantCondition(t, "Renew(taken over)", err, "renew", &next)

}

// testRenewAfterForceRelease checks the renewal of a holder whose lock an
// operator force-released (one Failure release conditioned on the holder's
// revision, as herdlock release writes it): it is refused with the released
// item, which still carries the holder's revision, and changes nothing. The
// lock tells it from its own release by that item, so every store must
// report it the same way.
func testRenewAfterForceRelease(t *testing.T, e *env) {
	k := e.key("k")
	held := mustAcquire(t, e.s, req(k, "holder", baseMs))
	op, err := e.s.Release(ctx(t), storeapi.ReleaseRequest{Key: k, Revision: "holder", NowMs: baseMs + 1,
		Result: lockcore.Failure, Failures: held.Failures, FailReason: "operator_release"})
	if err != nil {
		t.Fatalf("Release(operator) = %v", err)
	}
	rr := storeapi.RenewRequest{Key: k, Revision: "holder", NowMs: baseMs + 2, LeaseUntilMs: baseMs + 2 + leaseMs}
	_, err = e.s.Renew(ctx(t), rr)
	wantCondition(t, "Renew(force-released)", err, "renew", &op)
	// A renewal whose lease would not extend the stored one (DynamoStore's
	// beat-only write) is refused the same way.
	rr.LeaseUntilMs = baseMs
	_, err = e.s.Renew(ctx(t), rr)
	wantCondition(t, "Renew(force-released, shorter lease)", err, "renew", &op)
	wantItem(t, "Get() after refused renewals", mustGet(t, e.s, k), op)
}

// testRenewNeverShortens checks that a renewal whose lease end is earlier
// than the stored one (applied late, or from a holder whose clock stepped
// back) keeps the stored lease end but still records the heartbeat and
// moves the beat, and that one with the same end is applied (an SDK retry
// of the latest).
func testRenewNeverShortens(t *testing.T, e *env) {
	k := e.key("k")
	mustAcquire(t, e.s, req(k, "holder", baseMs))
	later := storeapi.RenewRequest{Key: k, Revision: "holder", NowMs: baseMs + 4000, LeaseUntilMs: baseMs + 4000 + leaseMs}
	renewed, err := e.s.Renew(ctx(t), later)
	if err != nil {
		t.Fatalf("Renew(later) = %v", err)
	}
	early := storeapi.RenewRequest{Key: k, Revision: "holder", NowMs: baseMs + 2000, LeaseUntilMs: baseMs + 2000 + leaseMs}
	got, err := e.s.Renew(ctx(t), early)
	want := renewed
	want.Beat++
	want.HeartbeatAtMs = early.NowMs
	if err != nil {
		t.Fatalf("Renew(earlier lease end) = %v, want applied without shortening", err)
	}
	wantItem(t, "Renew(earlier lease end)", got, want)
	wantItem(t, "Get() after Renew(earlier lease end)", mustGet(t, e.s, k), want)

	again, err := e.s.Renew(ctx(t), later)
	want.Beat++
	want.HeartbeatAtMs = later.NowMs
	if err != nil {
		t.Fatalf("Renew(same lease end again) = %v", err)
	}
	wantItem(t, "Renew(same lease end again)", again, want)
}

func testRelease(t *testing.T, e *env) {
	tests := []struct {
		name string
		rr   storeapi.ReleaseRequest
		want func(held storeapi.Item) storeapi.Item
	}{
		{"success", storeapi.ReleaseRequest{Result: lockcore.Success, ResultRef: "s3://bucket/success",
			// Failure fields of a Success request are not written.
			Failures: 3, NotBeforeMs: baseMs + 9, FailReason: "ignored", FailRecentUntilMs: baseMs + 9},
			func(it storeapi.Item) storeapi.Item { return it }},
		{"success with answer", storeapi.ReleaseRequest{Result: lockcore.Success, ResultRef: "inline", Answer: []byte{0, 1, 2, 255}},
			func(it storeapi.Item) storeapi.Item { it.Answer = []byte{0, 1, 2, 255}; return it }},
		{"failure", storeapi.ReleaseRequest{Result: lockcore.Failure, ResultRef: "",
			Failures: 2, NotBeforeMs: baseMs + 2500, FailReason: "upstream_429", FailRecentUntilMs: baseMs + 12_500},
			func(it storeapi.Item) storeapi.Item {
				it.Failures, it.NotBeforeMs, it.FailReason, it.FailRecentUntilMs = 2, baseMs+2500, "upstream_429", baseMs+12_500
				return it
			}},
	}
	for i, tt := range tests {
		k := e.key(fmt.Sprintf("case-%d", i))
		held := mustAcquire(t, e.s, req(k, "holder", baseMs))
		rr := tt.rr
		rr.Key, rr.Revision, rr.NowMs = k, "holder", baseMs+500
		got, err := e.s.Release(ctx(t), rr)
		if err != nil {
			t.Fatalf("Release(%s) = %v", tt.name, err)
		}
		want := held
		want.Released = true
		want.ReleasedAtMs = rr.NowMs
		want.Result = rr.Result
		want.ResultRef = rr.ResultRef
		want.ResultFence = held.Fence
		want.PublishedRevision, want.PublishedResult = "holder", rr.Result
		want = tt.want(want)
		wantItem(t, fmt.Sprintf("Release(%s)", tt.name), got, want)
		wantItem(t, fmt.Sprintf("Get() after Release(%s)", tt.name), mustGet(t, e.s, k), want)
	}
}

func testReleaseRetry(t *testing.T, e *env) {
	k := e.key("k")
	mustAcquire(t, e.s, req(k, "holder", baseMs))
	rr := storeapi.ReleaseRequest{Key: k, Revision: "holder", NowMs: baseMs + 500, Result: lockcore.Success, ResultRef: "ref"}
	first, err := e.s.Release(ctx(t), rr)
	if err != nil {
		t.Fatalf("Release() = %v", err)
	}
	// A retried release with the same result succeeds and changes nothing
	// that matters (the same fence, result and reference).
	again, err := e.s.Release(ctx(t), rr)
	if err != nil {
		t.Fatalf("Release(retry, same result) = %v, want success", err)
	}
	wantItem(t, "Release(retry, same result)", again, first)

	// A different result is refused and leaves the published one alone.
	other := rr
	other.Result = lockcore.Failure
	other.ResultRef = "other"
	_, err = e.s.Release(ctx(t), other)
	wantCondition(t, "Release(different result)", err, "release", &first)
	wantItem(t, "Get() after refused Release", mustGet(t, e.s, k), first)
}

// testReleaseRetryKeepsPublicationTime checks that a release retried
// later, its first attempt applied and its response lost, writes nothing:
// the item keeps the first attempt's ReleasedAtMs, so a newcomer judges a
// success's freshness from its publication, not from the last retry. So
// for a holder's success or failure and an operator's force-release.
func testReleaseRetryKeepsPublicationTime(t *testing.T, e *env) {
	tests := []struct {
		name string
		rr   storeapi.ReleaseRequest
	}{
		{"success", storeapi.ReleaseRequest{Result: lockcore.Success, ResultRef: "s3://bucket/success"}},
		{"success with answer", storeapi.ReleaseRequest{Result: lockcore.Success, ResultRef: "inline", Answer: []byte("42")}},
		{"failure", storeapi.ReleaseRequest{Result: lockcore.Failure,
			Failures: 1, NotBeforeMs: baseMs + 1500, FailReason: "upstream_5xx", FailRecentUntilMs: baseMs + 10_500}},
		{"operator's force-release", storeapi.ReleaseRequest{Result: lockcore.Failure, FailReason: storeapi.OperatorReleaseReason}},
	}
	for i, tt := range tests {
		k := e.key(fmt.Sprintf("case-%d", i))
		mustAcquire(t, e.s, req(k, "holder", baseMs))
		rr := tt.rr
		rr.Key, rr.Revision, rr.NowMs = k, "holder", baseMs+500
		first, err := e.s.Release(ctx(t), rr)
		if err != nil {
			t.Fatalf("Release(%s) = %v", tt.name, err)
		}
		retry := rr
		retry.NowMs = baseMs + 900
		got, err := e.s.Release(ctx(t), retry)
		if err != nil {
			t.Fatalf("Release(%s, retried 400 ms later) = %v, want nil: it was published", tt.name, err)
		}
		wantItem(t, fmt.Sprintf("Release(%s, retried 400 ms later)", tt.name), got, first)
		wantItem(t, fmt.Sprintf("Get() after the retried Release(%s)", tt.name), mustGet(t, e.s, k), first)
		if got.ReleasedAtMs != rr.NowMs {
			t.Errorf("Release(%s, retried): ReleasedAtMs = %d, want the first publication's %d", tt.name, got.ReleasedAtMs, rr.NowMs)
		}
		if rr.Result != lockcore.Success {
			continue
		}
		// A newcomer whose fresh-success window began after the
		// publication, but before the retry, acquires.
		nr := req(k, "newcomer", baseMs+1000)
		nr.FreshSuccessSinceMs = baseMs + 600
		if got, err := e.s.Acquire(ctx(t), nr); err != nil || got.Revision != "newcomer" {
			t.Errorf("Acquire(%s, fresh since after the publication, before the retry) = revision %q, %v, want acquired",
				tt.name, got.Revision, err)
		}
	}
}

func testReleaseRefused(t *testing.T, e *env) {
	k := e.key("k")
	held := mustAcquire(t, e.s, req(k, "holder", baseMs))
	_, err := e.s.Release(ctx(t), storeapi.ReleaseRequest{Key: k, Revision: "other", NowMs: baseMs + 1, Result: lockcore.Success, ResultRef: "x"})
	wantCondition(t, "Release(wrong revision)", err, "release", &held)
	wantItem(t, "Get() after refused Release", mustGet(t, e.s, k), held)

	// A successor took over on the wall clock; the late holder's release
	// (even a retry of the same result) must not publish.
	sr := req(k, "successor", baseMs+maxHoldMs+allowance.Milliseconds()+1)
	sr.UseWallClock, sr.ClockAllowance = true, allowance
	next := mustAcquire(t, e.s, sr)
	_, err = e.s.Release(ctx(t), storeapi.ReleaseRequest{Key: k, Revision: "holder", NowMs: baseMs + 2, Result: lockcore.Success, ResultRef: "late"})
	wantCondition(t, "Release(taken over)", err, "release", &next)
	wantItem(t, "Get() after late Release", mustGet(t, e.s, k), next)
}

// testReleaseRecognisesOwnPublication checks that a release applied, its
// response lost, and retried after a newcomer acquired the item, is
// recognised by the PrevRevision and PrevResult the newcomer's acquisition
// kept: the retry returns the newcomer's item and a nil error, and changes
// nothing. A retry with another result, or one generation later, is
// refused.
func testReleaseRecognisesOwnPublication(t *testing.T, e *env) {
	for _, res := range []lockcore.Result{lockcore.Success, lockcore.Failure} {
		k := e.key(string(res))
		mustAcquire(t, e.s, req(k, "holder", baseMs))
		rr := storeapi.ReleaseRequest{Key: k, Revision: "holder", NowMs: baseMs + 1, Result: res, ResultRef: "ref"}
		if _, err := e.s.Release(ctx(t), rr); err != nil {
			t.Fatalf("Release(%s) = %v", res, err)
		}
		next := mustAcquire(t, e.s, req(k, "newcomer", baseMs+2))
		got, err := e.s.Release(ctx(t), rr)
		if err != nil {
			t.Fatalf("Release(%s, retried after a newcomer acquired) = %v, want nil: it was published", res, err)
		}
		wantItem(t, fmt.Sprintf("Release(%s, retried after a newcomer acquired)", res), got, next)
		wantItem(t, "Get() after the recognised retry", mustGet(t, e.s, k), next)

		other := rr
		other.Result = lockcore.Success
		if res == lockcore.Success {
			other.Result = lockcore.Failure
		}
		_, err = e.s.Release(ctx(t), other)
		wantCondition(t, fmt.Sprintf("Release(%s, after publishing %s)", other.Result, res), err, "release", &next)

		mustRelease(t, e.s, k, "newcomer", lockcore.Success)
		later := mustAcquire(t, e.s, req(k, "later", baseMs+3))
		_, err = e.s.Release(ctx(t), rr)
		wantCondition(t, fmt.Sprintf("Release(%s, two acquisitions later)", res), err, "release", &later)
	}
}

// testReleaseRecognisedAfterFreedWrites checks the record of the last
// publication (PublishedRevision, PublishedResult): a holder's release,
// with either result or keeping the episode, records itself; acquisitions
// and the freeing of writes nobody held (Unheld) keep the record, so a
// retry of that release, its first attempt applied and its answer lost,
// is recognised after a late copy acquired over it, was freed, and a
// newcomer acquired: it returns the newcomer's item with a nil error and
// writes nothing. A release that was not applied (another result, another
// revision) is refused, and so is the retry once a newcomer has published
// since, or an operator's release has cleared the record; an operator's
// release that replaced the holder's failure still stands for the
// holder's retry. An Unheld request that is not a failure keeping the
// episode is refused before writing.
func testReleaseRecognisedAfterFreedWrites(t *testing.T, e *env) {
	tests := []struct {
		name string
		rr   storeapi.ReleaseRequest
	}{
		{"success", storeapi.ReleaseRequest{Result: lockcore.Success, ResultRef: "ref", Answer: []byte("42")}},
		{"failure", storeapi.ReleaseRequest{Result: lockcore.Failure, Failures: 1, NotBeforeMs: baseMs + 2, FailReason: "upstream_503",
			FailRecentUntilMs: baseMs + 9000}},
		{"failure keeping the episode", storeapi.ReleaseRequest{Result: lockcore.Failure, KeepEpisode: true}},
	}
	for i, tt := range tests {
		k := e.key(fmt.Sprintf("case-%d", i))
		mustAcquire(t, e.s, req(k, "holder", baseMs))
		rr := tt.rr
		rr.Key, rr.Revision, rr.NowMs = k, "holder", baseMs+1
		pub, err := e.s.Release(ctx(t), rr)
		if err != nil {
			t.Fatalf("Release(%s) = %v", tt.name, err)
		}
		if pub.PublishedRevision != "holder" || pub.PublishedResult != rr.Result {
			t.Errorf("Release(%s): published %q/%q, want %q/%q", tt.name, pub.PublishedRevision, pub.PublishedResult, "holder", rr.Result)
		}
		late := mustAcquire(t, e.s, req(k, "late-copy", baseMs+2))
		wantItem(t, "Acquire(late copy, over "+tt.name+")", late, e.writtenOver(req(k, "late-copy", baseMs+2), pub))
		free := storeapi.ReleaseRequest{Key: k, Revision: "late-copy", NowMs: baseMs + 3, Result: lockcore.Failure, KeepEpisode: true, Unheld: true}
		freed, err := e.s.Release(ctx(t), free)
		if err != nil {
			t.Fatalf("Release(freeing the late copy) = %v", err)
		}
		if freed.PublishedRevision != "holder" || freed.PublishedResult != rr.Result {
			t.Errorf("Release(freeing the late copy, after %s): published %q/%q, want the holder's kept", tt.name, freed.PublishedRevision, freed.PublishedResult)
		}
		next := mustAcquire(t, e.s, req(k, "newcomer", baseMs+4))
		for _, call := range []string{"retried", "retried again"} {
			got, err := e.s.Release(ctx(t), rr)
			if err != nil {
				t.Fatalf("Release(%s, %s after a freed late copy and a newcomer) = %v, want nil: it was published", tt.name, call, err)
			}
			wantItem(t, fmt.Sprintf("Release(%s, %s after a freed late copy and a newcomer)", tt.name, call), got, next)
			wantItem(t, "Get() after the recognised retry", mustGet(t, e.s, k), next)
		}

		other := rr
		other.Result, other.KeepEpisode, other.Answer = lockcore.Failure, false, nil
		if rr.Result == lockcore.Failure {
			other.Result = lockcore.Success
		}
		_, err = e.s.Release(ctx(t), other)
		wantCondition(t, fmt.Sprintf("Release(%s, after publishing %s)", other.Result, tt.name), err, "release", &next)
		stranger := storeapi.ReleaseRequest{Key: k, Revision: "late-copy", NowMs: baseMs + 4, Result: lockcore.Success, ResultRef: "ref"}
		_, err = e.s.Release(ctx(t), stranger)
		wantCondition(t, fmt.Sprintf("Release(success of the freed copy's revision, after %s)", tt.name), err, "release", &next)

		done := mustRelease(t, e.s, k, "newcomer", lockcore.Success)
		later := mustAcquire(t, e.s, req(k, "later", baseMs+5))
		wantItem(t, "Acquire(after the newcomer published)", later, e.writtenOver(req(k, "later", baseMs+5), done))
		_, err = e.s.Release(ctx(t), rr)
		wantCondition(t, fmt.Sprintf("Release(%s, retried after a newcomer published)", tt.name), err, "release", &later)
	}

	// An operator's force-release clears the record: the holder's failure
	// it replaced is not taken for a publication of the holder's, however
	// many acquisitions later.
	k := e.key("operator")
	mustAcquire(t, e.s, req(k, "holder", baseMs))
	failed := storeapi.ReleaseRequest{Key: k, Revision: "holder", NowMs: baseMs + 1, Result: lockcore.Failure,
		Failures: 1, FailReason: "upstream_503", FailRecentUntilMs: baseMs + 9000}
	if _, err := e.s.Release(ctx(t), failed); err != nil {
		t.Fatalf("Release(holder's failure) = %v", err)
	}
	cleared, err := e.s.Release(ctx(t), storeapi.ReleaseRequest{Key: k, Revision: "holder", NowMs: baseMs + 2, Result: lockcore.Failure,
		Failures: 1, FailReason: storeapi.OperatorReleaseReason})
	if err != nil {
		t.Fatalf("Release(operator) = %v", err)
	}
	if cleared.PublishedRevision != "" || cleared.PublishedResult != "" {
		t.Errorf("Release(operator): published %q/%q, want none", cleared.PublishedRevision, cleared.PublishedResult)
	}
	mustAcquire(t, e.s, req(k, "late-copy", baseMs+3))
	if _, err := e.s.Release(ctx(t), storeapi.ReleaseRequest{Key: k, Revision: "late-copy", NowMs: baseMs + 4, Result: lockcore.Failure,
		KeepEpisode: true, Unheld: true}); err != nil {
		t.Fatalf("Release(freeing the late copy) = %v", err)
	}
	next := mustAcquire(t, e.s, req(k, "newcomer", baseMs+5))
	_, err = e.s.Release(ctx(t), failed)
	wantCondition(t, "Release(holder's failure, retried after the operator's, a freed late copy and a newcomer)", err, "release", &next)

	for _, bad := range []storeapi.ReleaseRequest{
		{Key: k, Revision: "newcomer", NowMs: baseMs + 6, Result: lockcore.Success, Unheld: true},
		{Key: k, Revision: "newcomer", NowMs: baseMs + 6, Result: lockcore.Failure, Unheld: true},
	} {
		if _, err := e.s.Release(ctx(t), bad); err == nil || errors.Is(err, storeapi.ErrConditionFailed) {
			t.Errorf("Release(unheld, %s, keep episode %t) = %v, want a request error", bad.Result, bad.KeepEpisode, err)
		}
	}
	wantItem(t, "Get() after the refused requests", mustGet(t, e.s, k), next)
}

// testReleaseSuccessEndsEpisode checks that a Success release clears the
// failure episode its holder's acquisition kept.
func testReleaseSuccessEndsEpisode(t *testing.T, e *env) {
	k := e.key("k")
	mustAcquire(t, e.s, req(k, "failed", baseMs))
	if _, err := e.s.Release(ctx(t), storeapi.ReleaseRequest{Key: k, Revision: "failed", NowMs: baseMs + 1, Result: lockcore.Failure,
		Failures: 1, NotBeforeMs: baseMs + 2, FailReason: "upstream_503", FailRecentUntilMs: baseMs + 9000}); err != nil {
		t.Fatalf("Release(failure) = %v", err)
	}
	mustAcquire(t, e.s, req(k, "retry", baseMs+3))
	got := mustRelease(t, e.s, k, "retry", lockcore.Success)
	if got.Failures != 0 || got.NotBeforeMs != 0 || got.FailReason != "" || got.FailRecentUntilMs != 0 {
		t.Errorf("Release(success) after a failure: episode %d, %d, %q, %d, want all zero",
			got.Failures, got.NotBeforeMs, got.FailReason, got.FailRecentUntilMs)
	}
	wantItem(t, "Get() after Release(success)", mustGet(t, e.s, k), got)
}

// testHoldHistory checks the key's hold history: an acquisition records its
// time and keeps the history; a release with a history writes it, with
// either result; one without (a ghost's freeing, an operator's release)
// leaves it; a negative history is refused before writing.
func testHoldHistory(t *testing.T, e *env) {
	k := e.key("k")
	first := mustAcquire(t, e.s, req(k, "first", baseMs))
	if first.AcquiredAtMs != baseMs || first.HoldMeanMs != 0 || first.HoldDevMs != 0 {
		t.Errorf("Acquire(absent): acquired at %d, history %d/%d, want %d, 0/0", first.AcquiredAtMs, first.HoldMeanMs, first.HoldDevMs, int64(baseMs))
	}
	rel := func(rev string, at int64, res lockcore.Result, mean, dev int64) storeapi.Item {
		t.Helper()
		it, err := e.s.Release(ctx(t), storeapi.ReleaseRequest{Key: k, Revision: rev, NowMs: at, Result: res, ResultRef: "ref",
			HoldMeanMs: mean, HoldDevMs: dev})
		if err != nil {
			t.Fatalf("Release(%s, history %d/%d) = %v", rev, mean, dev, err)
		}
		return it
	}
	wantHistory := func(call string, it storeapi.Item, mean, dev int64) {
		t.Helper()
		if it.HoldMeanMs != mean || it.HoldDevMs != dev {
			t.Errorf("%s: history %d/%d, want %d/%d", call, it.HoldMeanMs, it.HoldDevMs, mean, dev)
		}
	}
	wantHistory("Release(success, 300/0)", rel("first", baseMs+300, lockcore.Success, 300, 0), 300, 0)
	second := mustAcquire(t, e.s, req(k, "second", baseMs+1_000))
	if second.AcquiredAtMs != baseMs+1_000 {
		t.Errorf("Acquire(released): acquired at %d, want %d", second.AcquiredAtMs, int64(baseMs+1_000))
	}
	wantHistory("Acquire(released)", second, 300, 0)
	wantHistory("Release(failure, 280/5)", rel("second", baseMs+1_280, lockcore.Failure, 280, 5), 280, 5)
	mustAcquire(t, e.s, req(k, "third", baseMs+2_000))
	_, err := e.s.Release(ctx(t), storeapi.ReleaseRequest{Key: k, Revision: "third", NowMs: baseMs + 2_001, Result: lockcore.Success,
		HoldMeanMs: 300, HoldDevMs: -1})
	if err == nil || errors.Is(err, storeapi.ErrConditionFailed) {
		t.Errorf("Release(negative deviation) = %v, want a request error", err)
	}
	wantHistory("Release(without history)", rel("third", baseMs+2_100, lockcore.Failure, 0, 0), 280, 5)
	wantItem(t, "Get() after Release(without history)", mustGet(t, e.s, k), rel("third", baseMs+2_100, lockcore.Failure, 0, 0))
}

// testReleaseAnswerRules checks the answer's limits: refused before writing
// with Failure and above MaxAnswerBytes, accepted at MaxAnswerBytes.
func testReleaseAnswerRules(t *testing.T, e *env) {
	k := e.key("k")
	held := mustAcquire(t, e.s, req(k, "holder", baseMs))
	base := storeapi.ReleaseRequest{Key: k, Revision: "holder", NowMs: baseMs + 1, ResultRef: "inline"}

	withFailure := base
	withFailure.Result, withFailure.Answer = lockcore.Failure, []byte("x")
	if _, err := e.s.Release(ctx(t), withFailure); err == nil || errors.Is(err, storeapi.ErrConditionFailed) {
		t.Errorf("Release(failure with an answer) = %v, want a request error", err)
	}
	tooLarge := base
	tooLarge.Result, tooLarge.Answer = lockcore.Success, make([]byte, lockcore.MaxAnswerBytes+1)
	if _, err := e.s.Release(ctx(t), tooLarge); !errors.Is(err, lockcore.ErrAnswerTooLarge) {
		t.Errorf("Release(answer of MaxAnswerBytes+1) = %v, want ErrAnswerTooLarge", err)
	}
	wantItem(t, "Get() after refused releases", mustGet(t, e.s, k), held)

	atLimit := base
	atLimit.Result, atLimit.Answer = lockcore.Success, make([]byte, lockcore.MaxAnswerBytes)
	atLimit.Answer[0], atLimit.Answer[lockcore.MaxAnswerBytes-1] = 1, 2
	got, err := e.s.Release(ctx(t), atLimit)
	var netErr *net.OpError
	if errors.As(err, &netErr) {
		// A request of half a megabyte on a loaded machine: the
		// connection can close under the response. A release is safe
		// to send again (the lock does so; the store recognises its
		// own publication), and a network error says nothing of the
		// store's rules.
		t.Logf("Release(answer of MaxAnswerBytes) = %v; sent again", err)
		got, err = e.s.Release(ctx(t), atLimit)
	}
	if err != nil {
		t.Fatalf("Release(answer of MaxAnswerBytes) = %v, want success", err)
	}
	if !bytes.Equal(got.Answer, atLimit.Answer) || !bytes.Equal(mustGet(t, e.s, k).Answer, atLimit.Answer) {
		t.Errorf("Release(answer of MaxAnswerBytes): answer of %d bytes stored, want %d", len(got.Answer), len(atLimit.Answer))
	}
}

// testItemTooLarge checks that a write whose item would exceed DynamoDB's
// 400 KB limit fails with ErrItemTooLarge and changes nothing.
func testItemTooLarge(t *testing.T, e *env) {
	k := e.key("k")
	held := mustAcquire(t, e.s, req(k, "holder", baseMs))
	ref := strings.Repeat("r", storeapi.MaxItemBytes)
	_, err := e.s.Release(ctx(t), storeapi.ReleaseRequest{Key: k, Revision: "holder", NowMs: baseMs + 1, Result: lockcore.Success, ResultRef: ref})
	if !errors.Is(err, storeapi.ErrItemTooLarge) {
		t.Errorf("Release(reference of %d bytes) = %v, want ErrItemTooLarge", len(ref), err)
	}
	wantItem(t, "Get() after the refused release", mustGet(t, e.s, k), held)

	big := lockcore.Key{Group: e.prefix, ID: strings.Repeat("i", storeapi.MaxItemBytes)}
	if _, err := e.s.Acquire(ctx(t), req(big, "holder", baseMs)); !errors.Is(err, storeapi.ErrItemTooLarge) {
		t.Errorf("Acquire(lock id of %d bytes) = %v, want ErrItemTooLarge", len(big.ID), err)
	}
	if _, found, err := e.s.Get(ctx(t), big); err != nil || found {
		t.Errorf("Get(refused oversized key) = found %t, %v, want not found", found, err)
	}
}

// testInvalidUTF8Refused checks that a string DynamoDB could not store is
// refused before anything is written, not stored altered.
func testInvalidUTF8Refused(t *testing.T, e *env) {
	k := e.key("k")
	bad := req(k, "holder", baseMs)
	bad.Holder = "owner-\xff"
	if _, err := e.s.Acquire(ctx(t), bad); err == nil || errors.Is(err, storeapi.ErrConditionFailed) {
		t.Errorf("Acquire(owner not UTF-8) = %v, want a request error", err)
	}
	if _, found, err := e.s.Get(ctx(t), k); err != nil || found {
		t.Fatalf("Get() after a refused Acquire = found %t, %v, want not found", found, err)
	}
	held := mustAcquire(t, e.s, req(k, "holder", baseMs))
	_, err := e.s.Release(ctx(t), storeapi.ReleaseRequest{Key: k, Revision: "holder", NowMs: baseMs + 1, Result: lockcore.Success, ResultRef: "\xc3("})
	if err == nil || errors.Is(err, storeapi.ErrConditionFailed) {
		t.Errorf("Release(reference not UTF-8) = %v, want a request error", err)
	}
	wantItem(t, "Get() after a refused Release", mustGet(t, e.s, k), held)
}

// testConcurrentAcquirers races several acquirers on one key, round after
// round, released rounds alternating with clock-free take-over rounds. Each
// round must have exactly one winner; every loser must be refused with the
// winner's item; fences rise by one per round.
func testConcurrentAcquirers(t *testing.T, e *env) {
	const (
		rounds     = 24
		contenders = 8
	)
	k := e.key("k")
	prev := mustAcquire(t, e.s, req(k, "round-0", baseMs))
	for round := 1; round <= rounds; round++ {
		takeover := round%2 == 0
		if !takeover {
			mustRelease(t, e.s, k, prev.Revision, lockcore.Failure)
		}
		type result struct {
			rev string
			it  storeapi.Item
			err error
		}
		results := make([]result, contenders)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for c := range contenders {
			r := req(k, fmt.Sprintf("round-%d-c%d", round, c), baseMs+int64(round))
			if takeover {
				r.Observed = &storeapi.Observation{Revision: prev.Revision, Beat: prev.Beat}
			}
			wg.Go(func() {
				<-start
				it, err := e.s.Acquire(ctx(t), r)
				results[c] = result{r.Revision, it, err}
			})
		}
		close(start)
		wg.Wait()

		var winners []result
		for _, r := range results {
			var ce *storeapi.ConditionError
			switch {
			case r.err == nil:
				winners = append(winners, r)
			case !errors.As(r.err, &ce):
				t.Fatalf("round %d: Acquire(%s) = %v, want success or *ConditionError", round, r.rev, r.err)
			}
		}
		if len(winners) != 1 {
			t.Fatalf("round %d (take-over %t): %d winners %v, want exactly 1", round, takeover, len(winners), winners)
		}
		win := winners[0]
		if win.it.Revision != win.rev || win.it.Fence != prev.Fence+1 {
			t.Fatalf("round %d: winner %s got item at revision %q fence %d, want its own revision and fence %d",
				round, win.rev, win.it.Revision, win.it.Fence, prev.Fence+1)
		}
		for _, r := range results {
			if r.err == nil {
				continue
			}
			var ce *storeapi.ConditionError
			errors.As(r.err, &ce)
			if ce.Current == nil || !ce.Current.Equal(win.it) {
				t.Fatalf("round %d: loser %s saw %+v, want the winner's item %+v", round, r.rev, ce.Current, win.it)
			}
		}
		wantItem(t, fmt.Sprintf("round %d: Get()", round), mustGet(t, e.s, k), win.it)
		prev = win.it
	}
}

func testKeyIsolation(t *testing.T, e *env) {
	// Pairs that a careless key encoding would merge.
	keys := []lockcore.Key{
		{Group: e.prefix + "/a", ID: "b/c"},
		{Group: e.prefix + "/a/b", ID: "c"},
		{Group: e.prefix + "/a", ID: "b"},
		{Group: e.prefix + "/b", ID: "a"},
		{Group: e.prefix + "/a#b", ID: "c"},
		{Group: e.prefix + "/a", ID: "b#c"},
	}
	items := make([]storeapi.Item, len(keys))
	for i, k := range keys {
		items[i] = mustAcquire(t, e.s, req(k, fmt.Sprintf("rev-%d", i), baseMs))
		if items[i].Fence != 1 {
			t.Fatalf("Acquire(key %d %+v).Fence = %d, want 1 (a fresh item)", i, k, items[i].Fence)
		}
	}
	// Renewing and releasing one key leaves the others as they
	// were, and one key's revision means nothing on another.
	if _, err := e.s.Renew(ctx(t), storeapi.RenewRequest{Key: keys[0], Revision: "rev-0", NowMs: baseMs + 1, LeaseUntilMs: baseMs + 1 + leaseMs}); err != nil {
		t.Fatalf("Renew(key 0) = %v", err)
	}
	mustRelease(t, e.s, keys[0], "rev-0", lockcore.Success)
	_, err := e.s.Release(ctx(t), storeapi.ReleaseRequest{Key: keys[1], Revision: "rev-0", NowMs: baseMs, Result: lockcore.Success})
	wantCondition(t, "Release(key 1, key 0's revision)", err, "release", &items[1])
	for i := 1; i < len(keys); i++ {
		wantItem(t, fmt.Sprintf("Get(key %d)", i), mustGet(t, e.s, keys[i]), items[i])
	}
	if got := mustGet(t, e.s, keys[0]); got.Key != keys[0] {
		t.Errorf("Get(key 0).Key = %+v, want %+v", got.Key, keys[0])
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%x", b)
}
