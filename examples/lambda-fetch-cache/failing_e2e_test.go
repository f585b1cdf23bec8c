package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/herdlock/herdlock/examples/lambda-fetch-cache/fetchcache"
	"github.com/herdlock/herdlock/examples/lambda-fetch-cache/internal/localrun"
	"github.com/herdlock/herdlock/internal/sandbox"
)

// TestEndToEndFailingUpstream runs the real bootstrap under the emulator
// against an upstream that answers 429 with a Retry-After for the first
// seconds of every item: the burst makes a bounded number of upstream
// calls that respect the Retry-After, and every invocation answers with
// data or with the clear error that says when to retry.
func TestEndToEndFailingUpstream(t *testing.T) {
	stack := newEmulatorStack(t)
	start := stack.start
	const key = "EUR-USD"

	t.Run("Retry-After 2 for 4 s: one call per Retry-After, and the refusals name the true time", func(t *testing.T) {
		const (
			retryAfter = 2 * time.Second
			throttled  = 4 * time.Second
		)
		// A 6 s function waits at most 4 s (the 2 s safety margin): long
		// enough for the second call, not for a third, whose not-before
		// comes after 4 s and some.
		r := start(t, localrun.Options{N: burstSize, Timeout: 6 * time.Second,
			Upstream: sandbox.UpstreamConfig{ThrottleFirst: throttled, RetryAfter: retryAfter}})
		warmUp(t, r)

		// Burst 1, then a burst at the time its refusals named: one call,
		// data for all.
		calls, refused := pacedBurst(t, r, "EUR-USD", retryAfter)
		named := refused.latestRetryAt()
		if named.IsZero() {
			t.Fatalf("burst 1 named no time to come back")
		}
		time.Sleep(time.Until(named))
		afterWindow(t, r, "EUR-USD", len(calls))

		// Burst 1 on another key, then a burst just after the upstream
		// recovered: data, or a time at most 2 s ahead.
		calls, _ = pacedBurst(t, r, "GBP-USD", retryAfter)
		time.Sleep(time.Until(calls[0].At.Add(throttled + 100*time.Millisecond)))
		sent := time.Now()
		late := classify(t, r.Pool.Burst(burstContext(t), localrun.Payloads(localrun.Repeat("GBP-USD", burstSize)...)))
		for _, f := range late.failed {
			if f.retryAt.After(sent.Add(2 * time.Second)) {
				t.Errorf("sandbox %d, sent %v after the upstream recovered: %q names %v, more than 2 s ahead",
					f.sandbox, sent.Sub(calls[0].At.Add(throttled)), f.message, f.retryAt)
			}
		}
		if len(late.data) > 0 {
			checkSameData(t, late.data)
		}
		t.Logf("burst just after recovery: %d upstream calls, %d data answers, %d clear errors",
			len(r.Upstream.ArrivalsFor("GBP-USD"))-len(calls), len(late.data), len(late.failed))
	})

	t.Run("Retry-After 8, longer than a 6 s function can wait: one call, the others answer at once", func(t *testing.T) {
		const retryAfter = 8 * time.Second
		r := start(t, localrun.Options{N: burstSize, Timeout: 6 * time.Second,
			Upstream: sandbox.UpstreamConfig{ThrottleFirst: retryAfter, RetryAfter: retryAfter}})
		warmUp(t, r)
		linesBefore := len(r.Pool.Lines())

		invs := r.Pool.Burst(burstContext(t), localrun.Payloads(localrun.Repeat(key, burstSize)...))
		answers := classify(t, invs)
		calls := r.Upstream.ArrivalsFor(key)
		if len(calls) != 1 {
			t.Fatalf("upstream calls = %d (%+v), want 1", len(calls), calls)
		}
		if len(answers.failed) != burstSize {
			t.Errorf("clear errors = %d, data answers = %d; want %d clear errors (the holder's own and the shared failure)",
				len(answers.failed), len(answers.data), burstSize)
		}
		answers.checkRetryAt(t, calls[0].At.Add(retryAfter))
		// A waiter that waited for its deadline would answer after 4 s
		// (6 s minus the 2 s safety margin).
		var slowest time.Duration
		for _, inv := range invs {
			slowest = max(slowest, inv.Latency())
		}
		t.Logf("burst of %d: %d upstream call, %d clear errors, slowest answer %v", burstSize, len(calls), len(answers.failed), slowest)
		for _, inv := range invs {
			if d := inv.Latency(); d > 3*time.Second {
				t.Errorf("sandbox %d answered after %v, want at once", inv.Sandbox, d)
			}
		}
		checkEMF(t, r.Pool.Lines()[linesBefore:], map[string]float64{
			"LockSharedFailure":     burstSize - 1,
			"LockEpisodeAttempts":   1,
			"LockAcquisitionFailed": burstSize - 1,
		})

		// At the time the answers named: one call.
		time.Sleep(time.Until(answers.latestRetryAt()))
		afterWindow(t, r, key, len(calls))
	})
}

// pacedBurst sends a burst on key to an upstream that answers 429 with
// retryAfter: it makes at most 2 upstream calls, retryAfter or more apart,
// and every invocation answers with data or the clear error, naming a
// time no earlier than the first refused call's Retry-After and no later
// than the last one's, rounded up to the second. It returns the calls and
// the answers.
func pacedBurst(t *testing.T, r *localrun.Run, key string, retryAfter time.Duration) ([]sandbox.Arrival, answers) {
	t.Helper()
	a := classify(t, r.Pool.Burst(burstContext(t), localrun.Payloads(localrun.Repeat(key, burstSize)...)))
	calls := r.Upstream.ArrivalsFor(key)
	t.Logf("burst 1 on %s: %d upstream calls %v, %d data answers, %d clear errors", key, len(calls), callGaps(calls), len(a.data), len(a.failed))
	if len(calls) < 1 || len(calls) > 2 {
		t.Fatalf("upstream calls = %d (%+v), want 1 or 2", len(calls), calls)
	}
	if len(calls) == 2 {
		if gap := calls[1].At.Sub(calls[0].At); gap < retryAfter {
			t.Errorf("second upstream call %v after the first, want at least the Retry-After %v", gap, retryAfter)
		}
	}
	first, last := calls[0].At.Add(retryAfter), calls[len(calls)-1].At.Add(retryAfter)
	for _, f := range a.failed {
		if f.retryAt.Before(first) || f.retryAt.After(last.Add(1500*time.Millisecond)) {
			t.Errorf("sandbox %d: %q names %v, want a time from %v to %v rounded up", f.sandbox, f.message, f.retryAt, first, last)
		}
	}
	if len(a.data) > 0 {
		checkSameData(t, a.data)
	}
	return calls, a
}

// warmUp starts every sandbox of r's pool (their cold starts would
// otherwise outlast the answers being measured) with a burst on another
// key, whatever it answers.
func warmUp(t *testing.T, r *localrun.Run) {
	t.Helper()
	for _, inv := range r.Pool.Burst(burstContext(t), localrun.Payloads(localrun.Repeat("WARM-UP", len(r.Pool.Sandboxes))...)) {
		if inv.Err != nil {
			t.Fatalf("warm-up: sandbox %d: %v", inv.Sandbox, inv.Err)
		}
	}
}

// afterWindow checks a burst on key once the upstream answers again: it
// makes exactly one upstream call, after the callsBefore of the earlier
// bursts, and every invocation gets its data.
func afterWindow(t *testing.T, r *localrun.Run, key string, callsBefore int) {
	t.Helper()
	resps := decodeAll(t, r.Pool.Burst(burstContext(t), localrun.Payloads(localrun.Repeat(key, burstSize)...)))
	calls := r.Upstream.ArrivalsFor(key)
	if got := len(calls) - callsBefore; got != 1 {
		t.Fatalf("upstream calls of the burst after the window = %d, want 1", got)
	}
	if last := calls[len(calls)-1]; last.Rejected {
		t.Fatalf("the call after the window was refused: %+v", last)
	}
	var fromUpstream int
	for _, resp := range resps {
		if resp.Source == fetchcache.SourceUpstream {
			fromUpstream++
		}
	}
	if fromUpstream != 1 {
		t.Errorf("answers from the upstream after the window = %d, want 1", fromUpstream)
	}
	t.Logf("burst after the window: %d upstream call, %d data answers", len(calls)-callsBefore, len(resps))
	checkSameData(t, resps)
}

// callGaps returns the time of each call after the first.
func callGaps(calls []sandbox.Arrival) []time.Duration {
	var out []time.Duration
	for _, c := range calls[1:] {
		out = append(out, c.At.Sub(calls[0].At).Round(time.Millisecond))
	}
	return out
}

// answers sorts a burst's answers into data and clear errors.
type answers struct {
	data   []fetchcache.Response
	failed []clearError
}

// clearError is an answer with the example's UnavailableError.
type clearError struct {
	sandbox int
	message string
	retryAt time.Time
}

// classify fails the test on any answer that is neither data nor the
// clear error saying the upstream is throttled and naming when to retry.
func classify(t *testing.T, invs []sandbox.Invocation) answers {
	t.Helper()
	var a answers
	for _, inv := range invs {
		if inv.Err != nil || !inv.FunctionError {
			resp, err := localrun.Decode(inv)
			if err != nil {
				t.Fatalf("invocation %d: %v", inv.Sandbox, err)
			}
			a.data = append(a.data, resp)
			continue
		}
		var doc struct {
			Message string `json:"errorMessage"`
			Type    string `json:"errorType"`
		}
		if err := json.Unmarshal(inv.Body, &doc); err != nil || doc.Type != "UnavailableError" {
			t.Fatalf("sandbox %d: function error %s, want an UnavailableError", inv.Sandbox, inv.Body)
		}
		_, at, ok := strings.Cut(doc.Message, "the upstream is throttled ("+fetchcache.CodeThrottled+"); retry after ")
		retryAt, err := time.Parse(time.RFC3339, at)
		if !ok || err != nil {
			t.Fatalf("sandbox %d: error %q, want it to say the upstream is throttled and when to retry", inv.Sandbox, doc.Message)
		}
		if strings.Contains(doc.Message, "rate limited") || strings.Contains(doc.Message, "Too Many Requests") {
			t.Errorf("sandbox %d: error %q carries the upstream's own text", inv.Sandbox, doc.Message)
		}
		a.failed = append(a.failed, clearError{sandbox: inv.Sandbox, message: doc.Message, retryAt: retryAt})
	}
	return a
}

// checkRetryAt checks that every clear error names a time at or after
// earliest (the first refused call plus its Retry-After), and not much
// later: the time the holder got its answer, rounded up to the second.
func (a answers) checkRetryAt(t *testing.T, earliest time.Time) {
	t.Helper()
	for _, f := range a.failed {
		if f.retryAt.Before(earliest) || f.retryAt.After(earliest.Add(3*time.Second)) {
			t.Errorf("sandbox %d: %q names %v, want a time from %v to 3 s later", f.sandbox, f.message, f.retryAt, earliest)
		}
	}
}

func (a answers) latestRetryAt() time.Time {
	var latest time.Time
	for _, f := range a.failed {
		if f.retryAt.After(latest) {
			latest = f.retryAt
		}
	}
	return latest
}
