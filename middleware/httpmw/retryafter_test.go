package httpmw_test

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/middleware/httpmw"
)

func TestRetryAfterCountsDownToTheNotBefore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := shapes[1]
		serve := s.wrap(failing(&hintedError{code: "upstream_throttled", wait: 30 * time.Second}), lockcore.NewMemoryStore(), quiet())
		checkRetryAfter(t, request(t, serve, sample(t, s, samplePair), 10*time.Second).header("Retry-After"), 30)
		for _, tc := range []struct {
			after time.Duration
			least int64
		}{
			{2500 * time.Millisecond, 28}, // 27.5 s left, rounded up
			{17 * time.Second, 11},        // 10.5 s left, more than a waiter can wait
			// With less left than a waiter can wait, it waits for the
			// not-before and tries again: not an answer to check here.
		} {
			time.Sleep(tc.after)
			g := request(t, serve, sample(t, s, samplePair), 10*time.Second)
			if g.Status != 429 {
				t.Errorf("after %v more: status %d, want 429", tc.after, g.Status)
			}
			checkRetryAfter(t, g.header("Retry-After"), tc.least)
		}
	})
}

// TestThrottleReasons: a failure reason that names a throttle (it
// contains "throttl", "rate_limit" or "too_many") is answered 429, any
// other 503, to the holder and to the shared failure's waiters.
func TestThrottleReasons(t *testing.T) {
	tests := []struct {
		reason string
		status int
	}{
		{"quota_exhausted", 503},
		{"upstream_throttled", 429},
		{"rate_limited", 429},
		{"too_many_calls", 429},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := shapes[1]
				serve := s.wrap(failing(&hintedError{code: tt.reason, wait: 10 * time.Second}), lockcore.NewMemoryStore(), quiet())
				for i := range 2 { // the holder, then the shared failure
					if g := request(t, serve, sample(t, s, samplePair), 10*time.Second); g.Status != tt.status {
						t.Errorf("request %d: status %d, want %d", i, g.Status, tt.status)
					}
				}
			})
		})
	}
}

// TestRetryAfterIsSpread: a herd told to come back after a throttle does
// not come back in one second: the waiters' Retry-After values differ,
// and none names a time before the shared not-before (RFC 9110 §10.2.3
// leaves the delay to the server).
func TestRetryAfterIsSpread(t *testing.T) {
	for _, s := range shapes {
		t.Run(s.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const n = 20
				release := make(chan struct{})
				h := func(context.Context, string) (httpmw.Response[rate], error) {
					<-release
					return httpmw.Response[rate]{}, &hintedError{code: "upstream_throttled", wait: 30 * time.Second}
				}
				serve := s.wrap(h, lockcore.NewMemoryStore(), quiet())
				answers := make([]got, n)
				var wg sync.WaitGroup
				for i := range n {
					wg.Go(func() { answers[i] = request(t, serve, sample(t, s, samplePair), 10*time.Second) })
				}
				synctest.Wait()
				close(release)
				wg.Wait()
				seen := map[string]bool{}
				for i, g := range answers {
					if g.Status != 429 {
						t.Errorf("answer %d: status %d, want 429", i, g.Status)
					}
					checkRetryAfter(t, g.header("Retry-After"), 30)
					seen[g.header("Retry-After")] = true
				}
				if len(seen) < 2 {
					t.Errorf("every one of %d clients was told Retry-After %v, want them spread", n, seen)
				}
			})
		})
	}
}

// TestRetryAfterOfAWaitThatRanOutIsSpread: a wait that ran out has no
// not-before; its Retry-After is spread over whole seconds from 1.
func TestRetryAfterOfAWaitThatRanOutIsSpread(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := shapes[1]
		release := make(chan struct{})
		h := func(ctx context.Context, pair string) (httpmw.Response[rate], error) {
			<-release
			return okHandler(ctx, pair)
		}
		serve := s.wrap(h, lockcore.NewMemoryStore(), quiet(lockcore.WithMaxWait(time.Second)))
		var wg sync.WaitGroup
		// The holder's deadline outlasts the 20 one-second waits below, so
		// its hold never reaches its maximum while they wait.
		wg.Go(func() { request(t, serve, sample(t, s, samplePair), time.Minute) })
		synctest.Wait()
		seen := map[int64]bool{}
		for range 20 {
			g := request(t, serve, sample(t, s, samplePair), 10*time.Second)
			n, err := strconv.ParseInt(g.header("Retry-After"), 10, 64)
			if g.Status != 503 || err != nil || n < 1 || n > 3 {
				t.Errorf("status %d Retry-After %q, want 503 and 1 to 3", g.Status, g.header("Retry-After"))
			}
			seen[n] = true
		}
		close(release)
		wg.Wait()
		if len(seen) < 2 {
			t.Errorf("Retry-After always %v, want it spread", seen)
		}
	})
}

// TestRetryAfterIsNeverBeforeALongHoldBack: a lock configured to hold a
// failing key back for 3 h (lockcore.FailureEpisode.MaxHoldBack) tells the clients
// of its shared failure to come back no earlier than the hold-back's end:
// Retry-After is not cut to an hour.
func TestRetryAfterIsNeverBeforeALongHoldBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := shapes[1]
		serve := s.wrap(failing(&hintedError{code: "upstream_down"}), lockcore.NewMemoryStore(),
			quiet(lockcore.WithFailureEpisode(lockcore.FailureEpisode{Window: 3 * time.Hour}), lockcore.WithFailureEpisode(lockcore.FailureEpisode{MaxHoldBack: 3 * time.Hour})))
		for i := range lockcore.DefaultMaxAttempts { // the attempts of the episode, each its holder's own 502
			if g := request(t, serve, sample(t, s, samplePair), 10*time.Second); g.Status != 502 {
				t.Fatalf("attempt %d: status %d, want the holder's 502", i, g.Status)
			}
		}
		time.Sleep(time.Minute)
		g := request(t, serve, sample(t, s, samplePair), 10*time.Second)
		if g.Status != 503 {
			t.Fatalf("status %d, want the shared failure's 503", g.Status)
		}
		checkRetryAfter(t, g.header("Retry-After"), int64((3*time.Hour-time.Minute)/time.Second))
	})
}
