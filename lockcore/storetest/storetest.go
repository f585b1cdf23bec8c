package storetest

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/herdlock/herdlock/lockcore"
)

// Run runs the conformance suite on the stores that newStore returns. It
// calls newStore once per subtest, with that subtest's t; newStore may return
// the same store every time, because every subtest uses keys of its own
// (unique per call of Run, so a table may outlive one run). newStore may
// call t.Skip for a subtest whose name it knows the server cannot pass; that
// is the only skip the suite allows, and each one must be documented.
//
// Subtests that do not share state run in parallel.
func Run(t *testing.T, newStore func(t *testing.T) lockcore.Store) {
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
		{"AcquireResetsItem", testAcquireResetsItem},
		{"AcquireWallClock", testAcquireWallClock},
		{"AcquireObservation", testAcquireObservation},
		{"AcquireOwnRetriedWrite", testAcquireOwnRetriedWrite},
		{"ConditionErrorAbsentItem", testConditionErrorAbsentItem},
		{"FenceMonotonic", testFenceMonotonic},
		{"FenceBaseSeedsFreshItem", testFenceBaseSeedsFreshItem},
		{"Renew", testRenew},
		{"RenewRefused", testRenewRefused},
		{"Release", testRelease},
		{"ReleaseRetry", testReleaseRetry},
		{"ReleaseRefused", testReleaseRefused},
		{"Enroll", testEnroll},
		{"ConcurrentAcquirers", testConcurrentAcquirers},
		{"KeyIsolation", testKeyIsolation},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := newStore(t)
			if s == nil {
				t.Fatal("newStore() = nil")
			}
			tt.fn(t, &env{s: s, prefix: "storetest-" + nonce + "/" + tt.name})
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

// env is one subtest's store and key namespace.
type env struct {
	s      lockcore.Store
	prefix string
}

// key returns a key of this subtest; different ids give different keys.
func (e *env) key(id string) lockcore.Key {
	return lockcore.Key{Group: e.prefix, ID: id}
}

// req returns a plain acquire request for key k with revision rev, made at
// nowMs: lease until nowMs + lease, hard maximum nowMs + 60 s, no wall-clock
// or clock-free branch.
func req(k lockcore.Key, rev string, nowMs int64) lockcore.AcquireRequest {
	return lockcore.AcquireRequest{
		Key:           k,
		Owner:         "owner-" + rev,
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

// written is the item a successful Acquire of r must produce, with the
// given fence.
func written(r lockcore.AcquireRequest, fence int64) lockcore.Item {
	return lockcore.Item{
		Key:           r.Key,
		Owner:         r.Owner,
		Revision:      r.Revision,
		Fence:         fence,
		Lease:         r.Lease,
		HeartbeatAtMs: r.NowMs,
		LeaseUntilMs:  r.LeaseUntilMs,
		ExpiresAtMs:   r.ExpiresAtMs,
		RecordAccount: r.RecordAccount,
		TTL:           r.TTL,
	}
}

func ctx(t *testing.T) context.Context { return t.Context() }

// mustAcquire acquires or fails the test.
func mustAcquire(t *testing.T, s lockcore.Store, r lockcore.AcquireRequest) lockcore.Item {
	t.Helper()
	it, err := s.Acquire(ctx(t), r)
	if err != nil {
		t.Fatalf("Acquire(%s, rev %q) = %v, want success", r.Key.ID, r.Revision, err)
	}
	return it
}

func mustRelease(t *testing.T, s lockcore.Store, k lockcore.Key, rev string, res lockcore.Result) lockcore.Item {
	t.Helper()
	it, err := s.Release(ctx(t), lockcore.ReleaseRequest{Key: k, Revision: rev, NowMs: baseMs + 1, Result: res, ResultRef: "ref-" + rev})
	if err != nil {
		t.Fatalf("Release(%s, rev %q) = %v, want success", k.ID, rev, err)
	}
	return it
}

func mustGet(t *testing.T, s lockcore.Store, k lockcore.Key) lockcore.Item {
	t.Helper()
	it, found, err := s.Get(ctx(t), k)
	if err != nil || !found {
		t.Fatalf("Get(%s) = found %t, %v, want found", k.ID, found, err)
	}
	return it
}

// wantCondition checks that err is a *ConditionError for op whose Current is
// want (nil: no item).
func wantCondition(t *testing.T, call string, err error, op string, want *lockcore.Item) {
	t.Helper()
	var ce *lockcore.ConditionError
	if !errors.As(err, &ce) {
		t.Fatalf("%s = %v, want *lockcore.ConditionError", call, err)
	}
	if !errors.Is(err, lockcore.ErrConditionFailed) {
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
	case want != nil && *ce.Current != *want:
		t.Errorf("%s: ConditionError.Current =\n  %+v\nwant\n  %+v", call, *ce.Current, *want)
	}
}

func wantItem(t *testing.T, call string, got, want lockcore.Item) {
	t.Helper()
	if got != want {
		t.Errorf("%s =\n  %+v\nwant\n  %+v", call, got, want)
	}
}

func testGetAbsent(t *testing.T, e *env) {
	it, found, err := e.s.Get(ctx(t), e.key("absent"))
	if err != nil || found || it != (lockcore.Item{}) {
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
// previous hold: Beat, Waiters, Result, ResultRef, ResultFence, ReleasedAtMs
// and a TTL the new request does not set are all gone.
func testAcquireResetsItem(t *testing.T, e *env) {
	for _, res := range []lockcore.Result{lockcore.Success, lockcore.Failure} {
		k := e.key(string(res))
		first := mustAcquire(t, e.s, req(k, "first", baseMs))
		if _, err := e.s.Renew(ctx(t), lockcore.RenewRequest{Key: k, Revision: "first", NowMs: baseMs + 1, LeaseUntilMs: baseMs + 1 + leaseMs}); err != nil {
			t.Fatalf("Renew() = %v", err)
		}
		if _, err := e.s.Enroll(ctx(t), k, "first"); err != nil {
			t.Fatalf("Enroll() = %v", err)
		}
		mustRelease(t, e.s, k, "first", res)

		r := req(k, "second", baseMs+5)
		r.TTL = 0
		got := mustAcquire(t, e.s, r)
		wantItem(t, fmt.Sprintf("Acquire(released with %s)", res), got, written(r, first.Fence+1))
		wantItem(t, "Get() after re-acquire", mustGet(t, e.s, k), written(r, first.Fence+1))
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
		wantAcquireOutcome(t, fmt.Sprintf("Acquire(%s)", tt.name), got, err, tt.wantAcquired, cr, held)
	}
}

// wantAcquireOutcome checks that Acquire(cr) over held either wrote the
// contender's item with the next fence (acquired) or failed its condition
// with held as the current item.
func wantAcquireOutcome(t *testing.T, call string, got lockcore.Item, err error, acquired bool, cr lockcore.AcquireRequest, held lockcore.Item) {
	t.Helper()
	if !acquired {
		wantCondition(t, call, err, "acquire", &held)
		return
	}
	if err != nil {
		t.Errorf("%s = %v, want success", call, err)
		return
	}
	wantItem(t, call, got, written(cr, held.Fence+1))
}

func testAcquireObservation(t *testing.T, e *env) {
	renew := func(k lockcore.Key, rev string) lockcore.Item {
		t.Helper()
		it, err := e.s.Renew(ctx(t), lockcore.RenewRequest{Key: k, Revision: rev, NowMs: baseMs + 10, LeaseUntilMs: baseMs + 10 + leaseMs})
		if err != nil {
			t.Fatalf("Renew() = %v", err)
		}
		return it
	}
	tests := []struct {
		name     string
		renewals int
		observed lockcore.Observation
		want     bool
	}{
		{"match", 0, lockcore.Observation{Revision: "holder", Beat: 0}, true},
		{"match after renewals", 2, lockcore.Observation{Revision: "holder", Beat: 2}, true},
		{"beat moved on", 1, lockcore.Observation{Revision: "holder", Beat: 0}, false},
		{"beat ahead", 0, lockcore.Observation{Revision: "holder", Beat: 1}, false},
		{"other revision", 0, lockcore.Observation{Revision: "someone-else", Beat: 0}, false},
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
		wantAcquireOutcome(t, fmt.Sprintf("Acquire(observation %s)", tt.name), got, err, tt.want, cr, held)
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
	renewed, err := e.s.Renew(ctx(t), lockcore.RenewRequest{Key: k, Revision: "mine", NowMs: baseMs + 1, LeaseUntilMs: baseMs + 1 + leaseMs})
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
}

func testConditionErrorAbsentItem(t *testing.T, e *env) {
	k := e.key("absent")
	_, err := e.s.Renew(ctx(t), lockcore.RenewRequest{Key: k, Revision: "r", NowMs: baseMs, LeaseUntilMs: baseMs + leaseMs})
	wantCondition(t, "Renew(absent)", err, "renew", nil)
	_, err = e.s.Release(ctx(t), lockcore.ReleaseRequest{Key: k, Revision: "r", NowMs: baseMs, Result: lockcore.Success, ResultRef: "x"})
	wantCondition(t, "Release(absent)", err, "release", nil)
	_, err = e.s.Enroll(ctx(t), k, "r")
	wantCondition(t, "Enroll(absent)", err, "enroll", nil)
	// None of them may create the item.
	if _, found, err := e.s.Get(ctx(t), k); err != nil || found {
		t.Fatalf("Get() after refused writes on an absent item = found %t, %v, want not found", found, err)
	}
}

func testFenceMonotonic(t *testing.T, e *env) {
	k := e.key("k")
	var fences []int64
	add := func(it lockcore.Item) { fences = append(fences, it.Fence) }

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
	or.Observed = &lockcore.Observation{Revision: "r4", Beat: 0}
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
	r2.FenceBase = (baseMs + 1000) * 1000 // PROTOCOL.md §4: nowMs·1000
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
		rr := lockcore.RenewRequest{Key: k, Revision: "holder", NowMs: baseMs + int64(i)*3000, LeaseUntilMs: baseMs + int64(i)*3000 + leaseMs}
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
	rr := lockcore.RenewRequest{Key: k, Revision: "other", NowMs: baseMs + 1, LeaseUntilMs: baseMs + 1 + leaseMs}
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

	// A renewal applied late, after a later one, cannot shorten the lease;
	// one with the same end is applied (an SDK retry of the latest).
	k2 := e.key("late")
	mustAcquire(t, e.s, req(k2, "holder", baseMs))
	later := lockcore.RenewRequest{Key: k2, Revision: "holder", NowMs: baseMs + 4000, LeaseUntilMs: baseMs + 4000 + leaseMs}
	renewed, err := e.s.Renew(ctx(t), later)
	if err != nil {
		t.Fatalf("Renew(later) = %v", err)
	}
	early := lockcore.RenewRequest{Key: k2, Revision: "holder", NowMs: baseMs + 2000, LeaseUntilMs: baseMs + 2000 + leaseMs}
	_, err = e.s.Renew(ctx(t), early)
	wantCondition(t, "Renew(applied late, shorter)", err, "renew", &renewed)
	if again, err := e.s.Renew(ctx(t), later); err != nil || again.LeaseUntilMs != later.LeaseUntilMs || again.Beat != renewed.Beat+1 {
		t.Errorf("Renew(same lease end again) = %+v, %v, want applied", again, err)
	}
}

func testRelease(t *testing.T, e *env) {
	for _, res := range []lockcore.Result{lockcore.Success, lockcore.Failure} {
		k := e.key(string(res))
		held := mustAcquire(t, e.s, req(k, "holder", baseMs))
		rr := lockcore.ReleaseRequest{Key: k, Revision: "holder", NowMs: baseMs + 500, Result: res, ResultRef: "s3://bucket/" + string(res)}
		got, err := e.s.Release(ctx(t), rr)
		if err != nil {
			t.Fatalf("Release(%s) = %v", res, err)
		}
		want := held
		want.Released = true
		want.ReleasedAtMs = rr.NowMs
		want.Result = res
		want.ResultRef = rr.ResultRef
		want.ResultFence = held.Fence
		wantItem(t, fmt.Sprintf("Release(%s)", res), got, want)
		wantItem(t, "Get() after Release", mustGet(t, e.s, k), want)
	}
}

func testReleaseRetry(t *testing.T, e *env) {
	k := e.key("k")
	mustAcquire(t, e.s, req(k, "holder", baseMs))
	rr := lockcore.ReleaseRequest{Key: k, Revision: "holder", NowMs: baseMs + 500, Result: lockcore.Success, ResultRef: "ref"}
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

func testReleaseRefused(t *testing.T, e *env) {
	k := e.key("k")
	held := mustAcquire(t, e.s, req(k, "holder", baseMs))
	_, err := e.s.Release(ctx(t), lockcore.ReleaseRequest{Key: k, Revision: "other", NowMs: baseMs + 1, Result: lockcore.Success, ResultRef: "x"})
	wantCondition(t, "Release(wrong revision)", err, "release", &held)
	wantItem(t, "Get() after refused Release", mustGet(t, e.s, k), held)

	// A successor took over on the wall clock; the late holder's release
	// (even a retry of the same result) must not publish.
	sr := req(k, "successor", baseMs+maxHoldMs+allowance.Milliseconds()+1)
	sr.UseWallClock, sr.ClockAllowance = true, allowance
	next := mustAcquire(t, e.s, sr)
	_, err = e.s.Release(ctx(t), lockcore.ReleaseRequest{Key: k, Revision: "holder", NowMs: baseMs + 2, Result: lockcore.Success, ResultRef: "late"})
	wantCondition(t, "Release(taken over)", err, "release", &next)
	wantItem(t, "Get() after late Release", mustGet(t, e.s, k), next)
}

func testEnroll(t *testing.T, e *env) {
	k := e.key("k")
	held := mustAcquire(t, e.s, req(k, "holder", baseMs))
	want := held
	for i := 1; i <= 3; i++ {
		got, err := e.s.Enroll(ctx(t), k, "holder")
		if err != nil {
			t.Fatalf("Enroll() #%d = %v", i, err)
		}
		want.Waiters = int64(i)
		wantItem(t, fmt.Sprintf("Enroll() #%d", i), got, want)
	}
	_, err := e.s.Enroll(ctx(t), k, "other")
	wantCondition(t, "Enroll(wrong revision)", err, "enroll", &want)
	wantItem(t, "Get() after Enroll", mustGet(t, e.s, k), want)
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
			it  lockcore.Item
			err error
		}
		results := make([]result, contenders)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for c := range contenders {
			r := req(k, fmt.Sprintf("round-%d-c%d", round, c), baseMs+int64(round))
			if takeover {
				r.Observed = &lockcore.Observation{Revision: prev.Revision, Beat: prev.Beat}
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
			var ce *lockcore.ConditionError
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
			var ce *lockcore.ConditionError
			errors.As(r.err, &ce)
			if ce.Current == nil || *ce.Current != win.it {
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
	items := make([]lockcore.Item, len(keys))
	for i, k := range keys {
		items[i] = mustAcquire(t, e.s, req(k, fmt.Sprintf("rev-%d", i), baseMs))
		if items[i].Fence != 1 {
			t.Fatalf("Acquire(key %d %+v).Fence = %d, want 1 (a fresh item)", i, k, items[i].Fence)
		}
	}
	// Renewing, releasing and enrolling one key leaves the others as they
	// were, and one key's revision means nothing on another.
	if _, err := e.s.Renew(ctx(t), lockcore.RenewRequest{Key: keys[0], Revision: "rev-0", NowMs: baseMs + 1, LeaseUntilMs: baseMs + 1 + leaseMs}); err != nil {
		t.Fatalf("Renew(key 0) = %v", err)
	}
	if _, err := e.s.Enroll(ctx(t), keys[0], "rev-0"); err != nil {
		t.Fatalf("Enroll(key 0) = %v", err)
	}
	mustRelease(t, e.s, keys[0], "rev-0", lockcore.Success)
	_, err := e.s.Release(ctx(t), lockcore.ReleaseRequest{Key: keys[1], Revision: "rev-0", NowMs: baseMs, Result: lockcore.Success})
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
