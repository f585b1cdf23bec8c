package httpmw_test

import (
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
		if g := request(t, serve, sample(t, s, samplePair), 10*time.Second); g.header("Retry-After") != "30" {
			t.Fatalf("holder Retry-After %q, want 30", g.header("Retry-After"))
		}
		for _, tc := range []struct {
			after time.Duration
			want  string
		}{
			{2500 * time.Millisecond, "28"}, // 27.5 s left, rounded up
			{17 * time.Second, "11"},        // 10.5 s left, more than a waiter can wait
			// With less left than a waiter can wait, it waits for the
			// not-before and tries again: not an answer to check here.
		} {
			time.Sleep(tc.after)
			if g := request(t, serve, sample(t, s, samplePair), 10*time.Second); g.Status != 429 || g.header("Retry-After") != tc.want {
				t.Errorf("after %v more: %d Retry-After %q, want 429 %s", tc.after, g.Status, g.header("Retry-After"), tc.want)
			}
		}
	})
}

func TestThrottleReasonIsConfigurable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := shapes[1]
		h := failing(&hintedError{code: "quota_exhausted", wait: 10 * time.Second})
		for _, tc := range []struct {
			opts   []httpmw.Option
			status int
		}{
			{nil, 503},
			{[]httpmw.Option{httpmw.WithThrottleReason(func(r string) bool { return r == "quota_exhausted" })}, 429},
		} {
			serve := s.wrap(h, lockcore.NewMemoryStore(), append([]httpmw.Option{quiet()}, tc.opts...)...)
			for i := range 2 { // the holder, then the shared failure
				if g := request(t, serve, sample(t, s, samplePair), 10*time.Second); g.Status != tc.status {
					t.Errorf("request %d: status %d, want %d", i, g.Status, tc.status)
				}
			}
		}
	})
}
