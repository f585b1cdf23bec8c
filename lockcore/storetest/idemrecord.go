package storetest

import (
	"fmt"
	"testing"

	"github.com/herdlock/herdlock/lockcore"
)

// The life of an idempotency record (package middleware/idempotency) as a
// store sees it: one lock item, acquired by a herd attempt whose
// fresh-success window is the retention and whose TTL is a day past it,
// completed by a Success release whose answer is the record (lockmw's
// format byte, then "idem1 <fingerprint> <completedAtMs> <fence>" and the
// answer), failed with a not-before when errors are kept. The
// conformance subtest IdempotencyRecordLife checks each step's item on
// the store; the differential case of the same name requires every
// server to answer each step as the MemoryStore does.

const (
	idemRetentionMs = 3_600_000 // idempotency.DefaultExpiresAfter
	idemKeptErrorMs = 30_000    // a WithKeptErrors window
	idemFailReason  = "handler_error"
)

// idemAcquire is the request of an invocation with the record's key at
// nowMs, as lockcore builds it for the layer: wall clock, the retention
// as the fresh-success window, a failure policy, a TTL a day past the
// retention, a fence base from the clock.
func idemAcquire(k lockcore.Key, rev string, nowMs int64) lockcore.AcquireRequest {
	return lockcore.AcquireRequest{
		Key:                 k,
		Owner:               "owner-" + rev,
		Revision:            rev,
		Lease:               lease,
		NowMs:               nowMs,
		LeaseUntilMs:        nowMs + leaseMs,
		ExpiresAtMs:         nowMs + maxHoldMs,
		RecordAccount:       account,
		TTL:                 (nowMs+idemRetentionMs)/1000 + 86_400,
		FenceBase:           nowMs * 1000,
		UseWallClock:        true,
		ClockAllowance:      allowance,
		MaxAttempts:         lockcore.DefaultMaxAttempts,
		FreshSuccessSinceMs: nowMs - idemRetentionMs,
	}
}

// idemAnswer is a completed record as lockmw stores it inline: the raw
// format byte, the header with the payload's fingerprint, the holder's
// completion time and fence, then the answer's JSON.
func idemAnswer(fence, completedAtMs int64) []byte {
	return fmt.Appendf(nil, "ridem1 sha256:n4bQgYhMfWWaL-qgxVrQFaO_TxsrC4Is0V1sFbDwCgg %d %d\n{\"id\":\"r1\",\"amount\":5}", completedAtMs, fence)
}

// idemComplete is the holder's release that completes the record.
func idemComplete(k lockcore.Key, rev string, nowMs int64, answer []byte) lockcore.ReleaseRequest {
	return lockcore.ReleaseRequest{Key: k, Revision: rev, NowMs: nowMs, Result: lockcore.Success, Answer: answer}
}

// idemKeptError is the holder's release of a kept error: a failure whose
// not-before holds the duplicates back for the window.
func idemKeptError(k lockcore.Key, rev string, nowMs int64) lockcore.ReleaseRequest {
	notBefore := nowMs + idemKeptErrorMs
	return lockcore.ReleaseRequest{Key: k, Revision: rev, NowMs: nowMs, Result: lockcore.Failure,
		Failures: 1, NotBeforeMs: notBefore, FailReason: idemFailReason, FailRecentUntilMs: notBefore + leaseMs}
}

// idemLife is the record's life as steps on key k, with the time of each.
type idemLife struct {
	first, duplicate, takeover lockcore.AcquireRequest // in progress
	lateComplete, lateFail     lockcore.ReleaseRequest // of first, after the take-over
	complete                   lockcore.ReleaseRequest // of takeover
	fresh, expired             lockcore.AcquireRequest // at the retention's last millisecond, one after
	kept                       lockcore.ReleaseRequest // of expired
	tooEarly, retry            lockcore.AcquireRequest // before the not-before, at it
}

func newIdemLife(k lockcore.Key) idemLife {
	var l idemLife
	l.first = idemAcquire(k, "holder", baseMs)
	l.duplicate = idemAcquire(k, "duplicate", baseMs+100)
	l.takeover = idemAcquire(k, "successor", l.first.LeaseUntilMs+allowance.Milliseconds()+1)
	l.lateComplete = idemComplete(k, "holder", l.takeover.NowMs+100, idemAnswer(baseMs*1000+1, l.takeover.NowMs+90))
	l.lateFail = idemKeptError(k, "holder", l.takeover.NowMs+100)
	doneMs := l.takeover.NowMs + 500
	l.complete = idemComplete(k, "successor", doneMs, idemAnswer(baseMs*1000+2, doneMs-10))
	l.fresh = idemAcquire(k, "dup-fresh", doneMs+idemRetentionMs)
	l.expired = idemAcquire(k, "after-expiry", doneMs+idemRetentionMs+1)
	l.kept = idemKeptError(k, "after-expiry", l.expired.NowMs+200)
	l.tooEarly = idemAcquire(k, "too-early", l.kept.NotBeforeMs-1)
	l.retry = idemAcquire(k, "retry", l.kept.NotBeforeMs)
	return l
}

// ops is the life as the differential's steps, each followed by a Get.
func (l idemLife) ops() []op {
	acq := func(r lockcore.AcquireRequest) op { r.Key = lockcore.Key{}; return op{kind: opAcquire, acquire: r} }
	rel := func(r lockcore.ReleaseRequest) op { r.Key = lockcore.Key{}; return op{kind: opRelease, release: r} }
	var ops []op
	for _, o := range []op{acq(l.first), acq(l.duplicate), acq(l.takeover), rel(l.lateComplete), rel(l.lateFail),
		rel(l.complete), acq(l.fresh), acq(l.expired), rel(l.kept), acq(l.tooEarly), acq(l.retry)} {
		ops = append(ops, o, op{kind: opGet})
	}
	return ops
}

// testIdempotencyRecordLife checks the items of an idempotency record's
// life: in progress (a duplicate refused with it), taken over after its
// holder's lease lapsed (the late holder can neither complete nor fail
// its successor's record), completed with the fingerprint and the answer
// (a duplicate at the retention's last millisecond refused with them,
// bytes as written), run again one millisecond past the retention (the
// answer gone), failed with a kept error's not-before (a duplicate before
// it refused, one at it admitted), each with the TTL its request set.
func testIdempotencyRecordLife(t *testing.T, e *env) {
	k := e.key("charge#order-1")
	l := newIdemLife(k)
	step := func(call string, got lockcore.Item, want lockcore.Item) {
		t.Helper()
		wantItem(t, call, got, want)
		wantItem(t, "Get() after "+call, mustGet(t, e.s, k), want)
	}
	refused := func(call string, err error, op string, want lockcore.Item) {
		t.Helper()
		wantCondition(t, call, err, op, &want)
		wantItem(t, "Get() after "+call, mustGet(t, e.s, k), want)
	}

	held := mustAcquire(t, e.s, l.first)
	step("Acquire(in progress)", held, written(l.first, l.first.FenceBase+1))
	_, err := e.s.Acquire(ctx(t), l.duplicate)
	refused("Acquire(duplicate in progress)", err, "acquire", held)

	succ := mustAcquire(t, e.s, l.takeover)
	step("Acquire(take-over after the lapsed lease)", succ, e.writtenOver(l.takeover, held))
	_, err = e.s.Release(ctx(t), l.lateComplete)
	refused("Release(late holder completes)", err, "release", succ)
	_, err = e.s.Release(ctx(t), l.lateFail)
	refused("Release(late holder fails)", err, "release", succ)

	done, err := e.s.Release(ctx(t), l.complete)
	if err != nil {
		t.Fatalf("Release(complete) = %v", err)
	}
	want := succ
	want.Released, want.ReleasedAtMs, want.Result, want.ResultFence = true, l.complete.NowMs, lockcore.Success, succ.Fence
	want.Answer = l.complete.Answer
	want.PublishedRevision, want.PublishedResult = l.complete.Revision, lockcore.Success // the record of this publication
	step("Release(complete)", done, want)
	_, err = e.s.Acquire(ctx(t), l.fresh)
	refused("Acquire(duplicate at the retention's end)", err, "acquire", done)

	again := mustAcquire(t, e.s, l.expired)
	step("Acquire(past the retention)", again, e.writtenOver(l.expired, done))
	failed, err := e.s.Release(ctx(t), l.kept)
	if err != nil {
		t.Fatalf("Release(kept error) = %v", err)
	}
	want = again
	want.Released, want.ReleasedAtMs, want.Result, want.ResultFence = true, l.kept.NowMs, lockcore.Failure, again.Fence
	want.Failures, want.NotBeforeMs, want.FailReason, want.FailRecentUntilMs = l.kept.Failures, l.kept.NotBeforeMs, l.kept.FailReason, l.kept.FailRecentUntilMs
	want.PublishedRevision, want.PublishedResult = l.kept.Revision, lockcore.Failure
	step("Release(kept error)", failed, want)
	_, err = e.s.Acquire(ctx(t), l.tooEarly)
	refused("Acquire(duplicate before the not-before)", err, "acquire", failed)
	retried := mustAcquire(t, e.s, l.retry)
	step("Acquire(at the not-before)", retried, e.writtenOver(l.retry, failed))
}
