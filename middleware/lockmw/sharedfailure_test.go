package lockmw_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/middleware/lockmw"
)

// sumMetric adds up metric name over the EMF documents in s.
func sumMetric(t *testing.T, s, name string) float64 {
	t.Helper()
	var sum float64
	for _, d := range emfDocs(t, s) {
		if v, ok := d[name].(float64); ok {
			sum += v
		}
	}
	return sum
}

// TestFailingUpstreamIsCalledAtMostMaxAttemptsPerBurst: an upstream failing
// without Retry-After gets FailureEpisode.MaxAttempts calls from a burst whose
// invocations can wait 3 s (5 s functions, 2 s safety margin), less than
// the 6 s hold-back of the exhausted episode; everybody else is told when
// the hold-back ends.
func TestFailingUpstreamIsCalledAtMostMaxAttemptsPerBurst(t *testing.T) {
	tests := []struct {
		name        string
		maxAttempts int // 0: the default
		want        int
	}{
		{"default", 0, 2},
		{"never retry within the burst", 1, 1},
		{"three attempts", 3, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const n = 30
				errUpstream := errors.New("test: upstream 503")
				up := &flakyUpstream{failures: n, err: errUpstream}
				var lockOpts []lockcore.Option
				if tt.maxAttempts > 0 {
					lockOpts = append(lockOpts, lockcore.WithFailureEpisode(lockcore.FailureEpisode{MaxAttempts: tt.maxAttempts}))
				}
				var metrics syncBuffer
				h := lockmw.Wrap(up.fetch, lockcore.NewMemoryStore(), keyOf, lockmw.WithLockGroup(group),
					lockmw.WithTelemetry(lockmw.Telemetry{Logger: discardLogger()}), lockmw.WithTelemetry(lockmw.Telemetry{EMFWriter: &metrics}), lockmw.WithLockOptions(lockOpts...))

				_, errs := burst(t, h, n, 5*time.Second)
				calls := up.callTimes()
				if got := len(calls); got != tt.want {
					t.Fatalf("upstream calls = %d, want %d", got, tt.want)
				}
				holdBackEnd := calls[len(calls)-1].Add(lockcore.DefaultLease)
				var own, shared int
				for i, err := range errs {
					var hf *lockcore.HolderFailedError
					switch {
					case errors.Is(err, errUpstream):
						own++
					case errors.Is(err, lockmw.ErrLockFailed) && errors.As(err, &hf):
						shared++
						if hf.Reason != "handler_error" || hf.Attempts != tt.want ||
							hf.NotBefore.Before(holdBackEnd) || hf.NotBefore.After(holdBackEnd.Add(100*time.Millisecond)) {
							t.Errorf("invocation %d: %+v, want reason %s after %d attempts, retry after the hold-back, %v",
								i, hf, "handler_error", tt.want, holdBackEnd)
						}
					default:
						t.Errorf("invocation %d: error %v, want the upstream's or the shared failure", i, err)
					}
				}
				if own != tt.want || shared != n-tt.want {
					t.Errorf("own upstream errors %d, shared failures %d; want %d and %d", own, shared, tt.want, n-tt.want)
				}
				if got := sumMetric(t, metrics.String(), "LockSharedFailure"); got != float64(n-tt.want) {
					t.Errorf("sum of %s = %v, want %d", "LockSharedFailure", got, n-tt.want)
				}
				// Each holder reports its attempt number: 1 + 2 + ... + want.
				if got, want := sumMetric(t, metrics.String(), "LockEpisodeAttempts"), float64(tt.want*(tt.want+1)/2); got != want {
					t.Errorf("sum of %s = %v, want %v", "LockEpisodeAttempts", got, want)
				}
			})
		})
	}
}

func TestRetryAfterLongerThanTheWaitEndsTheWaitersAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 30
		const retryAfter = 8 * time.Second
		up := &flakyUpstream{failures: n, err: &hintedError{after: retryAfter, code: "upstream_throttled"}}
		fallback := func(ctx context.Context, e event, err error) (string, error) {
			var hf *lockcore.HolderFailedError
			if errors.As(err, &hf) {
				return "stale rates, retry at " + hf.NotBefore.UTC().Format(time.RFC3339), nil
			}
			return "", err
		}
		h := lockmw.WrapHandlers(lockmw.Handlers[event, string]{Fetch: up.fetch, OnFailed: fallback},
			lockcore.NewMemoryStore(), keyOf, lockmw.WithLockGroup(group),
			lockmw.WithTelemetry(lockmw.Telemetry{Logger: discardLogger()}), lockmw.WithTelemetry(lockmw.Telemetry{EMFWriter: &syncBuffer{}}))

		start := time.Now()
		outs, errs := burst(t, h, n, 6*time.Second)
		if d := time.Since(start); d > time.Second {
			t.Errorf("burst took %v, want the waiters to answer at once", d)
		}
		calls := up.callTimes()
		if len(calls) != 1 {
			t.Fatalf("upstream calls = %d, want 1", len(calls))
		}
		want := "stale rates, retry at " + start.Add(20*time.Millisecond+retryAfter).Truncate(time.Second).UTC().Format(time.RFC3339)
		var fell, own int
		for i := range n {
			var he *hintedError
			switch {
			case errors.As(errs[i], &he):
				own++ // the holder
			case errs[i] != nil || outs[i] != want:
				t.Errorf("invocation %d: %q, %v; want %q", i, outs[i], errs[i], want)
			default:
				fell++
			}
		}
		if own != 1 {
			t.Errorf("upstream errors = %d, want 1 (the holder)", own)
		}
		if fell != n-1 {
			t.Errorf("fallback answers = %d, want %d", fell, n-1)
		}
	})
}
