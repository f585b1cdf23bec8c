package lockmw_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/lockcore/storeapi"
	"github.com/herdlock/herdlock/middleware/lockmw"
)

// What a coalesced follower is told when its leader's attempt ends
// without a success of its own: each follower must get the answer a
// waiter on the store would get, when that waiter would get it.

// stubbornLeader is a Fetch whose first call (the leader's) ignores its
// context and works for a minute and a half, longer than the followers'
// maximum wait; every later call works for a second.
func stubbornLeader() func(ctx context.Context, e event) (string, error) {
	var mu sync.Mutex
	calls := 0
	return func(ctx context.Context, e event) (string, error) {
		mu.Lock()
		calls++
		first := calls == 1
		mu.Unlock()
		if first {
			time.Sleep(90 * time.Second) // an upstream call that does not take ctx
		} else {
			time.Sleep(time.Second)
		}
		info, _ := lockmw.FromContext(ctx)
		return "v@" + strconv.FormatInt(info.Fence, 10), nil
	}
}

// doc is invocation i's metrics document.
func (hd *coalescedHerd) doc(t *testing.T, i int) map[string]any {
	t.Helper()
	for _, d := range emfDocs(t, hd.metrics.String()) {
		if d["requestId"] == "req-"+strconv.Itoa(i) {
			return d
		}
	}
	t.Fatalf("no metrics document of req-%d", i)
	return nil
}

// judgeFollowersServed checks invocations from..n-1 of hd against one
// success, published at pubAt with fence and ref: each is RELEASED with
// it by its own attempt, not coalesced, between pubAt and pubAt+within;
// or it is the publisher (acquirer, an index of hd, or -1).
func judgeFollowersServed(t *testing.T, hd *coalescedHerd, from, acquirer int, fence int64, ref string, pubAt time.Time, within time.Duration) {
	t.Helper()
	for i := from; i < hd.n; i++ {
		got := hd.infos[i]
		if i == acquirer {
			if hd.errs[i] != nil || got.Outcome != lockcore.Acquired || got.Coalesced {
				t.Errorf("invocation %d: %+v, %v; want ACQUIRED by its own attempt", i, got, hd.errs[i])
			}
			continue
		}
		if hd.errs[i] != nil || got.Outcome != lockcore.Released || got.Coalesced || got.Fence != fence || got.ResultRef != ref {
			t.Errorf("invocation %d: %+v, %v; want RELEASED by its own wait with fence %d and %q", i, got, hd.errs[i], fence, ref)
		}
		if d := hd.ends[i].Sub(pubAt); d < 0 || d > within {
			t.Errorf("invocation %d returned %v after the success, want within %v", i, d, within)
		}
		if d := hd.doc(t, i); d["lockOutcome"] != "RELEASED" {
			t.Errorf("invocation %d: metrics document outcome %v, want RELEASED", i, d["lockOutcome"])
		}
	}
}

// TestCoalescedFollowersAfterLeaseLost: the leader's lease is lost to
// another holder (an operator's force-release, then another invocation's
// acquire) while its Fetch, ignoring ctx, works on. Its followers, and an
// invocation that arrives after the hold ended, go to the lock themselves
// and are RELEASED with the other holder's success when it publishes it,
// not held until their maximum wait for a handler that no longer holds
// the lock.
func TestCoalescedFollowersAfterLeaseLost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := lockcore.NewMemoryStore()
		key := lockcore.Key{Group: group, ID: "EUR-USD"}
		hd := &coalescedHerd{n: 5, store: &opCounter{Store: mem}, fetch: stubbornLeader(),
			arrive: func(i int) time.Duration { return []time.Duration{0, 0, 0, 0, 4 * time.Second}[i] }}
		var fence int64
		var pubAt time.Time
		other := make(chan struct{}) // closed when the other holder is done
		go func() {
			defer close(other)
			time.Sleep(time.Second)
			it := item(t, mem, key)
			if _, err := mem.Release(context.Background(), storeapi.ReleaseRequest{Key: key, Revision: it.Revision,
				NowMs: time.Now().UnixMilli(), Result: lockcore.Failure, Failures: it.Failures, FailReason: "operator_release"}); err != nil {
				t.Errorf("operator's release: %v", err)
				return
			}
			other := holdElsewhere(t, context.Background(), mem, "EUR-USD")
			fence = other.Fence()
			time.Sleep(5 * time.Second)
			pubAt = time.Now()
			if err := other.Release(context.Background(), lockcore.Success, "ref-other"); err != nil {
				t.Errorf("other holder's release: %v", err)
			}
		}()
		hd.run(t)
		<-other
		judgeFollowersServed(t, hd, 1, -1, fence, "ref-other", pubAt, 2*lockcore.DefaultPollInterval)
		for i := 1; i < 4; i++ {
			if got := hd.doc(t, i)["LockCoalescedFallThrough"]; got != 1.0 {
				t.Errorf("follower %d: %s = %v, want 1", i, "LockCoalescedFallThrough", got)
			}
		}
		if n := hd.fetches.Load(); n != 1 {
			t.Errorf("fetches = %d, want 1: the leader's", n)
		}
	})
}

// TestCoalescedFollowersAfterLeaderHoldEnds: the leader's hold ends while
// its Fetch, ignoring ctx, works on, at its maximum hold or because its
// invocation's context was cancelled; the lock publishes the failure.
// Its followers stop waiting for it at that instant and go to the lock
// themselves: one of them acquires and fetches, and the others are
// RELEASED with its success, well before their maximum wait. (How soon
// after the success a waiter on the store reads it is lockcore's
// schedule, not coalescing's.)
func TestCoalescedFollowersAfterLeaderHoldEnds(t *testing.T) {
	cancelledAfter := func(d time.Duration) func(context.Context) context.Context {
		return func(ctx context.Context) context.Context {
			ctx, cancel := context.WithCancelCause(ctx)
			time.AfterFunc(d, func() { cancel(errors.New("invocation cancelled")) })
			return ctx
		}
	}
	tests := []struct {
		name          string
		leaderTimeout time.Duration
		leaderCtx     func(context.Context) context.Context
	}{
		{"maximum hold reached", 10 * time.Second, func(ctx context.Context) context.Context { return ctx }},
		{"leader's context cancelled", time.Minute, cancelledAfter(3 * time.Second)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var mu sync.Mutex // guards pubAt and holdEnd
				var pubAt, holdEnd time.Time
				start := time.Now()
				fetch := stubbornLeader()
				hd := &coalescedHerd{n: 4,
					timeout: func(i int) time.Duration {
						return []time.Duration{tt.leaderTimeout, time.Minute, time.Minute, time.Minute}[i]
					},
					ctx: func(i int, ctx context.Context) context.Context {
						if i == 0 {
							return tt.leaderCtx(ctx)
						}
						return ctx
					},
					fetch: func(ctx context.Context, e event) (string, error) {
						if e.N == 0 {
							context.AfterFunc(ctx, func() {
								mu.Lock()
								holdEnd = time.Now()
								mu.Unlock()
							})
						}
						out, err := fetch(ctx, e)
						if e.N != 0 {
							mu.Lock()
							pubAt = time.Now() // the release follows at once
							mu.Unlock()
						}
						return out, err
					}}
				hd.run(t)
				acquirer := -1
				for i := 1; i < hd.n; i++ {
					if hd.infos[i].Outcome == lockcore.Acquired {
						acquirer = i
					}
				}
				if acquirer < 0 {
					t.Fatalf("no follower acquired: %v", hd.errs[1:])
				}
				mu.Lock()
				defer mu.Unlock()
				if holdEnd.IsZero() {
					t.Fatal("the leader's hold did not end")
				}
				fence := hd.infos[acquirer].Fence
				judgeFollowersServed(t, hd, 1, acquirer, fence, "ref:v@"+strconv.FormatInt(fence, 10), pubAt,
					start.Add(lockcore.DefaultMaxWait).Sub(pubAt))
				for i := 1; i < hd.n; i++ {
					d := hd.doc(t, i)
					want := float64(holdEnd.Sub(start)) / float64(time.Millisecond)
					if d["LockCoalescedWaitDuration"] != want || d["LockCoalescedFallThrough"] != 1.0 {
						t.Errorf("follower %d: waited %v ms for the leader, fall-through %v; want %v ms (the end of its hold) and 1",
							i, d["LockCoalescedWaitDuration"], d["LockCoalescedFallThrough"], want)
					}
				}
				if n := hd.fetches.Load(); n != 2 {
					t.Errorf("fetches = %d, want 2: the leader's and one follower's", n)
				}
			})
		})
	}
}

// TestCoalescedFollowerWaitTimeout: a follower that waits for its leader
// until its own deadline less the margin ends as a waiter on the store
// that waited as long: FAILED with an error matching ErrWaitTimeout (code
// wait_timeout), at the same instant, with the same lock metrics (a wait,
// failed, timed out; no poll of its own) and the same log lines.
func TestCoalescedFollowerWaitTimeout(t *testing.T) {
	type ending struct {
		err  error
		end  time.Duration
		doc  map[string]any
		logs []map[string]any
	}
	run := func(t *testing.T, coalesce bool) ending {
		var e ending
		synctest.Test(t, func(t *testing.T) {
			var logs syncBuffer
			start := time.Now()
			hd := &coalescedHerd{n: 2, work: 20 * time.Second,
				timeout: func(i int) time.Duration { return []time.Duration{time.Minute, 5 * time.Second}[i] },
				opts: []lockmw.Option{coalescing(coalesce),
					lockmw.WithTelemetry(lockmw.Telemetry{Logger: slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))})}}
			hd.run(t)
			e.err, e.end, e.doc = hd.errs[1], hd.ends[1].Sub(start), hd.doc(t, 1)
			for _, l := range logJSON(t, logs.String()) {
				if l["requestId"] == "req-1" {
					e.logs = append(e.logs, l)
				}
			}
		})
		return e
	}
	waiter, follower := run(t, false), run(t, true)

	if !errors.Is(follower.err, lockcore.ErrWaitTimeout) || !errors.Is(follower.err, lockmw.ErrLockFailed) {
		t.Errorf("follower: %v, want ErrLockFailed and ErrWaitTimeout", follower.err)
	}
	if got, want := lockmw.ErrorReason(follower.err), lockmw.ErrorReason(waiter.err); got != want {
		t.Errorf("follower's error code %q, want the store waiter's %q", got, want)
	}
	if want := 5*time.Second - lockmw.DefaultSafetyMargin; follower.end != want || waiter.end != want {
		t.Errorf("follower returned after %v, store waiter after %v; want both after %v", follower.end, waiter.end, want)
	}
	// Every lock metric of the store waiter's document, with its value;
	// the follower polled nothing.
	for name, want := range waiter.doc {
		if !strings.HasPrefix(name, "Lock") && name != "WaitForLock" {
			continue
		}
		if name == "LockPollCount" {
			want = 0.0
		}
		if got, ok := follower.doc[name]; !ok || got != want {
			t.Errorf("follower's metrics document: %s = %v (present %v), want %v as the store waiter's", name, got, ok, want)
		}
	}
	for _, name := range []string{"LockAcquisitionWaitTimeout", "LockAcquisitionFailed", "WaitForLock"} {
		if follower.doc[name] != 1.0 {
			t.Errorf("follower's %s = %v, want 1", name, follower.doc[name])
		}
	}
	if follower.doc["lockOutcome"] != "FAILED" {
		t.Errorf("follower's lockOutcome = %v, want FAILED", follower.doc["lockOutcome"])
	}
	if got, want := logSummary(follower.logs), logSummary(waiter.logs); got != want {
		t.Errorf("follower's log lines:\n%s\nwant the store waiter's:\n%s", got, want)
	}
}

// logSummary is what a log query sees of lines: level, message, outcome,
// the error up to its lockcore sentinel, and the wait.
func logSummary(lines []map[string]any) string {
	var b strings.Builder
	for _, l := range lines {
		errText, _ := l["error"].(string)
		if i := strings.Index(errText, lockcore.ErrWaitTimeout.Error()); i >= 0 {
			errText = errText[:i+len(lockcore.ErrWaitTimeout.Error())]
		}
		fmt.Fprintf(&b, "%v | %v | outcome %v | error %q | waited %v\n", l["level"], l["msg"], l["outcome"], errText, l["waited"])
	}
	return b.String()
}

// TestCoalescedFollowerMaximumWait: the maximum wait bounds a follower's
// whole wait, for its leader and then on the store, as it bounds a store
// waiter's. The leader fails after 20 s; one follower acquires and works
// 20 s more; the other, with the default 30 s maximum wait and a minute
// left, ends FAILED with ErrWaitTimeout 30 s after it came, as a store
// waiter does, not RELEASED 40 s after it came.
func TestCoalescedFollowerMaximumWait(t *testing.T) {
	tests := []struct {
		name     string
		coalesce bool
	}{
		{"waiting on the store", false},
		{"coalesced", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var mu sync.Mutex
				calls := 0
				start := time.Now()
				hd := &coalescedHerd{n: 3, opts: []lockmw.Option{coalescing(tt.coalesce)},
					fetch: func(ctx context.Context, e event) (string, error) {
						mu.Lock()
						calls++
						first := calls == 1
						mu.Unlock()
						time.Sleep(20 * time.Second)
						if first {
							return "", errors.New("upstream 503")
						}
						return "v", nil
					}}
				hd.run(t)
				timedOut := 0
				for i := 1; i < hd.n; i++ {
					if hd.infos[i].Outcome == lockcore.Acquired {
						continue
					}
					timedOut++
					if err := hd.errs[i]; !errors.Is(err, lockcore.ErrWaitTimeout) || hd.ends[i].Sub(start) != lockcore.DefaultMaxWait {
						t.Errorf("invocation %d: %v after %v, want ErrWaitTimeout after the %v maximum wait",
							i, err, hd.ends[i].Sub(start), lockcore.DefaultMaxWait)
					}
					if got := hd.doc(t, i)["LockAcquisitionWaitTimeout"]; got != 1.0 {
						t.Errorf("invocation %d: %s = %v, want 1", i, "LockAcquisitionWaitTimeout", got)
					}
				}
				if timedOut != 1 {
					t.Errorf("%d invocations did not acquire, want 1", timedOut)
				}
			})
		})
	}
}

// TestCoalescedShortFollowerSharesAHeldBackFailure: another holder's
// failure holds new attempts back 20 s, past a follower's own limit (a
// 10 s function) but not past its leader's (a minute). A waiter on the
// store with that limit is told at once that the holder failed, with the
// not-before, and so must the follower be, instead of waiting to its
// limit for a leader that waits on, and then timing out: the failure was
// published before they came, or while they waited.
func TestCoalescedShortFollowerSharesAHeldBackFailure(t *testing.T) {
	tests := []struct {
		name     string
		coalesce bool
		failAt   time.Duration // when the other holder publishes its failure; the herd comes at 1 s
	}{
		{"store waiter, failure published before", false, 0},
		{"coalesced, failure published before", true, 0},
		{"store waiter, failure published while waiting", false, 3 * time.Second},
		{"coalesced, failure published while waiting", true, 3 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				start := time.Now()
				mem := lockcore.NewMemoryStore()
				other := holdElsewhere(t, context.Background(), mem, "EUR-USD")
				var mu sync.Mutex // guards notBefore and failedAt
				var notBefore, failedAt time.Time
				fail := func() {
					mu.Lock()
					defer mu.Unlock()
					failedAt = time.Now()
					notBefore = failedAt.Add(20 * time.Second)
					if err := other.Release(context.Background(), lockcore.Failure, "", lockcore.WithNotBefore(notBefore)); err != nil {
						t.Errorf("other holder's release: %v", err)
					}
				}
				done := make(chan struct{})
				time.AfterFunc(tt.failAt, func() { fail(); close(done) })
				hd := &coalescedHerd{n: 2, work: time.Second, store: &opCounter{Store: mem},
					arrive:  func(i int) time.Duration { return time.Second + time.Duration(i)*time.Millisecond },
					timeout: func(i int) time.Duration { return []time.Duration{time.Minute, 10 * time.Second}[i] },
					opts:    []lockmw.Option{coalescing(tt.coalesce)}}
				hd.run(t)
				<-done
				mu.Lock()
				defer mu.Unlock()
				var hf *lockcore.HolderFailedError
				if err := hd.errs[1]; !errors.Is(err, lockmw.ErrLockFailed) || !errors.As(err, &hf) || !hf.NotBefore.Equal(notBefore) {
					t.Fatalf("short invocation: %v, want ErrLockFailed with the holder's failure and its not-before %v", err, notBefore)
				}
				knowable := failedAt // when a waiter could know: the failure's publication, or its arrival
				if arrived := start.Add(hd.arrive(1)); arrived.After(knowable) {
					knowable = arrived
				}
				if d := hd.ends[1].Sub(knowable); d < 0 || d > 2*lockcore.DefaultPollInterval {
					t.Errorf("short invocation returned %v after it could know of the failure, want within two poll intervals", d)
				}
				if got := hd.doc(t, 1)["LockSharedFailure"]; got != 1.0 {
					t.Errorf("short invocation: %s = %v, want 1", "LockSharedFailure", got)
				}
				if hd.errs[0] != nil || hd.infos[0].Outcome != lockcore.Acquired {
					t.Errorf("long invocation: %+v, %v; want ACQUIRED after the not-before", hd.infos[0], hd.errs[0])
				}
			})
		})
	}
}
