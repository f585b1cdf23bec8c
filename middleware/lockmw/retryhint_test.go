package lockmw_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/middleware/lockmw"
)

// hintedError is a handler error with the retry hints.
type hintedError struct {
	after time.Duration
	code  string
}

func (e *hintedError) Error() string             { return "test: upstream refused: secret body text" }
func (e *hintedError) RetryAfter() time.Duration { return e.after }
func (e *hintedError) FailureReason() string     { return e.code }

// flakyUpstream stands for an upstream that fails its first failures calls
// after 20 ms each, with err, and answers afterwards. It records when each
// call started. Its fetch is a handler for every outcome: RELEASED reads
// what the holder stored.
type flakyUpstream struct {
	failures int
	err      error
	mu       sync.Mutex // guards calls
	calls    []time.Time
}

func (u *flakyUpstream) fetch(ctx context.Context, e event) (string, error) {
	if info, _ := lockmw.FromContext(ctx); info.Outcome == lockcore.Released {
		return "rates", nil // what the holder stored
	}
	u.mu.Lock()
	u.calls = append(u.calls, time.Now())
	n := len(u.calls)
	u.mu.Unlock()
	time.Sleep(20 * time.Millisecond)
	if n <= u.failures {
		return "", u.err
	}
	return "rates", nil
}

func (u *flakyUpstream) callTimes() []time.Time {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]time.Time(nil), u.calls...)
}

// burst runs n invocations of h at once, each with timeout, and returns
// their answers in order.
func burst(t *testing.T, h func(context.Context, event) (string, error), n int, timeout time.Duration) ([]string, []error) {
	t.Helper()
	outs, errs := make([]string, n), make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			ctx, cancel := invocationContext(t.Context(), timeout, fmt.Sprintf("req-%d", i))
			defer cancel()
			outs[i], errs[i] = h(ctx, event{Key: "EUR-USD"})
		})
	}
	wg.Wait()
	return outs, errs
}

func TestRetryAfterHoldsEveryoneBackUntilTheNotBefore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 30
		const retryAfter = 2 * time.Second
		up := &flakyUpstream{failures: 1, err: &hintedError{after: retryAfter, code: "upstream_throttled"}}
		store := lockcore.NewMemoryStore()
		h := lockmw.Wrap(up.fetch, store, keyOf, lockmw.WithLockGroup(group),
			lockmw.WithTelemetry(lockmw.Telemetry{Logger: discardLogger()}), lockmw.WithTelemetry(lockmw.Telemetry{EMFWriter: &syncBuffer{}}))

		start := time.Now()
		var outs []string
		var errs []error
		done := make(chan struct{})
		go func() {
			outs, errs = burst(t, h, n, 10*time.Second)
			close(done)
		}()
		// The first holder failed after 20 ms; a second wave arrives
		// within the not-before and must be held back too.
		time.Sleep(time.Second)
		it := item(t, store, lockcore.Key{Group: group, ID: "EUR-USD"})
		notBefore := time.UnixMilli(it.NotBeforeMs)
		// The bubble's clock moved only while the holder's fetch slept.
		if want := start.Add(20*time.Millisecond + retryAfter); it.Result != lockcore.Failure || it.FailReason != "upstream_throttled" ||
			it.Failures != 1 || !notBefore.Equal(want) {
			t.Fatalf("item after the first failure = %+v, want a failure upstream_throttled, 1 failure, not before %v", it, want)
		}
		late, lateErrs := burst(t, h, n, 10*time.Second)
		<-done

		calls := up.callTimes()
		if len(calls) != 2 {
			t.Fatalf("upstream calls = %d, want 2", len(calls))
		}
		if calls[1].Before(notBefore) {
			t.Errorf("second call at %v, before the not-before %v", calls[1].Sub(start), notBefore.Sub(start))
		}
		var own int
		for i := range n {
			var he *hintedError
			switch {
			case errors.As(errs[i], &he):
				own++ // the first holder
			case outs[i] != "rates" || errs[i] != nil:
				t.Errorf("first wave %d: %q, %v; want rates", i, outs[i], errs[i])
			}
			if late[i] != "rates" || lateErrs[i] != nil {
				t.Errorf("second wave %d: %q, %v; want rates", i, late[i], lateErrs[i])
			}
		}
		if own != 1 {
			t.Errorf("first wave: %d upstream errors, want 1 (the first holder)", own)
		}
	})
}

func TestFailureReleaseReasonAndNotBefore(t *testing.T) {
	tests := []struct {
		name          string
		err           error
		panics        bool
		wantReason    string
		wantNotBefore time.Duration // from the release; 0: none
	}{
		{"plain error", errors.New("boom"), false, "handler_error", 0},
		{"failure code", &hintedError{code: "upstream_timeout"}, false, "upstream_timeout", 0},
		{"wrapped hints", fmt.Errorf("fetch: %w", &hintedError{after: 3 * time.Second, code: "upstream_throttled"}), false, "upstream_throttled", 3 * time.Second},
		{"empty code", &hintedError{after: time.Second}, false, "handler_error", time.Second},
		{"unsafe code", &hintedError{code: "Status 429: {\"token\":1}"}, false, "unspecified", 0},
		{"negative wait", &hintedError{after: -time.Second, code: "x"}, false, "x", 0},
		{"a day's wait", &hintedError{after: 24 * time.Hour, code: "x"}, false, "x", time.Hour},
		{"panic", nil, true, "handler_panic", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				store := lockcore.NewMemoryStore()
				var released time.Time
				h := lockmw.Wrap(func(ctx context.Context, e event) (string, error) {
					released = time.Now() // time does not move in the bubble until the handler blocks
					if tt.panics {
						panic("handler bug")
					}
					return "", tt.err
				}, store, keyOf, lockmw.WithLockGroup(group), lockmw.WithTelemetry(lockmw.Telemetry{Logger: discardLogger()}), lockmw.WithTelemetry(lockmw.Telemetry{EMFWriter: &syncBuffer{}}))
				ctx, cancel := invocationContext(t.Context(), 10*time.Second, "req-1")
				defer cancel()
				func() {
					defer func() { _ = recover() }()
					_, _ = h(ctx, event{Key: "EUR-USD"})
				}()
				it := item(t, store, lockcore.Key{Group: group, ID: "EUR-USD"})
				var wantMs int64
				if tt.wantNotBefore > 0 {
					wantMs = released.Add(tt.wantNotBefore).UnixMilli()
				}
				if it.Result != lockcore.Failure || it.FailReason != tt.wantReason || it.NotBeforeMs != wantMs {
					t.Errorf("item = result %s, reason %q, not before %d; want failure, %q, %d", it.Result, it.FailReason, it.NotBeforeMs, tt.wantReason, wantMs)
				}
			})
		})
	}
}
