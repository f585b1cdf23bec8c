package httpmw_test

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/lockcore/storeapi"
	"github.com/herdlock/herdlock/middleware/httpmw"
)

// serveFunc answers one event of a shape.
type serveFunc func(ctx context.Context, event []byte) (got, error)

// outcomeCase is one outcome, checked on every shape: run makes the
// requests and returns the answer to check.
type outcomeCase struct {
	name       string
	h          handler
	opts       []httpmw.Option
	run        func(t *testing.T, s shape, serve serveFunc) got
	status     int
	code       string // the problem's code, "" for a success
	retryAfter int64  // the least Retry-After, 0 for none
	calls      int    // handler calls
}

func okHandler(_ context.Context, pair string) (httpmw.Response[rate], error) {
	return httpmw.OK(rate{Pair: pair, Bid: 1.1}), nil
}

func failing(err error) handler {
	return func(context.Context, string) (httpmw.Response[rate], error) { return httpmw.Response[rate]{}, err }
}

// once makes one request for pair with a 10 s deadline.
func once(pair string) func(t *testing.T, s shape, serve serveFunc) got {
	return func(t *testing.T, s shape, serve serveFunc) got {
		return request(t, serve, sample(t, s, pair), 10*time.Second)
	}
}

// twice makes two requests in a row and checks that the first got the
// same status and Retry-After as the second, which it returns: the holder
// answers as its waiters do.
func twice(t *testing.T, s shape, serve serveFunc) got {
	first := request(t, serve, sample(t, s, samplePair), 10*time.Second)
	second := request(t, serve, sample(t, s, samplePair), 10*time.Second)
	if first.Status != second.Status || (first.header("Retry-After") == "") != (second.header("Retry-After") == "") {
		t.Errorf("holder got %d Retry-After %q, waiter %d Retry-After %q; want the same status, both with Retry-After or neither",
			first.Status, first.header("Retry-After"), second.Status, second.header("Retry-After"))
	}
	return second
}

func request(t *testing.T, serve serveFunc, event []byte, timeout time.Duration) got {
	t.Helper()
	ctx, cancel := invocation(timeout)
	defer cancel()
	g, err := serve(ctx, event)
	if err != nil {
		t.Fatalf("adapter returned error %v, want an answer", err)
	}
	return g
}

func TestOutcomesMapToStatusOnEveryShape(t *testing.T) {
	cases := []outcomeCase{
		{name: "success", h: okHandler, run: once(samplePair), status: 200, calls: 1},
		{name: "handler status", h: func(context.Context, string) (httpmw.Response[rate], error) {
			return httpmw.Response[rate]{Status: http.StatusNotFound, Body: rate{Pair: "none"}}, nil
		}, run: once(samplePair), status: 404, calls: 1},
		{name: "shared throttle", h: failing(&hintedError{code: "upstream_throttled", wait: 30 * time.Second}),
			run: twice, status: 429, code: "upstream_throttled", retryAfter: 30, calls: 1},
		{name: "shared failure with not-before", h: failing(&hintedError{code: "upstream_unavailable", wait: 20 * time.Second}),
			run: twice, status: 503, code: "upstream_unavailable", retryAfter: 20, calls: 1},
		{name: "shared failure without not-before", h: failing(&hintedError{code: "upstream_bad_answer"}),
			opts: []httpmw.Option{quiet(lockcore.WithFailureEpisode(lockcore.FailureEpisode{MaxAttempts: 1}))},
			run: func(t *testing.T, s shape, serve serveFunc) got {
				if g := request(t, serve, sample(t, s, samplePair), 10*time.Second); g.Status != 502 {
					t.Errorf("holder status %d, want 502", g.Status)
				}
				// The episode is exhausted: held back for the failure
				// window (the 6 s lease), longer than this request can
				// wait, so it is refused at once with the time it ends.
				return request(t, serve, sample(t, s, samplePair), 5*time.Second)
			}, status: 503, code: "upstream_bad_answer", retryAfter: 6, calls: 1},
		{name: "wait ran out", h: nil, opts: []httpmw.Option{quiet(lockcore.WithMaxWait(time.Second))},
			run: waitRunsOut, status: 503, code: "wait_timeout", retryAfter: 1, calls: 1},
		{name: "missing key", h: okHandler, run: once(""), status: 400, code: "bad_request"},
		{name: "key over the partition-key limit", h: okHandler, run: once(strings.Repeat("k", storeapi.MaxPartitionKeyBytes+1)),
			status: 400, code: "key_too_long"},
		{name: "handler error", h: failing(errors.New("dial tcp rates.example: s3cr3t")), run: once(samplePair),
			status: 502, code: "error", calls: 1},
		{name: "handler error with a code", h: failing(&hintedError{code: "upstream_bad_answer"}), run: once(samplePair),
			status: 502, code: "upstream_bad_answer", calls: 1},
		{name: "no time left", h: okHandler, run: func(t *testing.T, s shape, serve serveFunc) got {
			return request(t, serve, sample(t, s, samplePair), time.Second)
		}, status: 503, code: "no_time_left", retryAfter: 1},
	}
	for _, s := range shapes {
		for _, tc := range cases {
			t.Run(s.name+"/"+tc.name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) { checkOutcome(t, s, tc) })
			})
		}
	}
}

func checkOutcome(t *testing.T, s shape, tc outcomeCase) {
	var store storeapi.Store = lockcore.NewMemoryStore()
	h := tc.h
	var block chan struct{}
	if h == nil { // the wait case: the holder waits until told
		block = make(chan struct{})
		h = func(ctx context.Context, pair string) (httpmw.Response[rate], error) {
			<-block
			return okHandler(ctx, pair)
		}
	}
	c := &counting{h: h}
	opts := append([]httpmw.Option{quiet()}, tc.opts...)
	serve := serveFunc(s.wrap(c.handle, store, opts...))
	if block != nil {
		serve = withHolder(t, s, serve, block)
	}
	g := tc.run(t, s, serve)
	if g.Status != tc.status {
		t.Fatalf("status %d (body %s), want %d", g.Status, g.Body, tc.status)
	}
	checkRetryAfter(t, g.header("Retry-After"), tc.retryAfter)
	if n := c.count(); n != tc.calls {
		t.Errorf("handler calls %d, want %d", n, tc.calls)
	}
	if s.name == "ALB" || s.name == "ALBMultiValue" {
		if want := strconv.Itoa(g.Status) + " " + http.StatusText(g.Status); g.Desc != want {
			t.Errorf("statusDescription %q, want %q", g.Desc, want)
		}
	}
	if g.Multi != (s.name == "ALBMultiValue") {
		t.Errorf("multi-value headers %t, want %t", g.Multi, s.name == "ALBMultiValue")
	}
	if tc.code == "" {
		if ct := g.header("Content-Type"); ct != "application/json" {
			t.Errorf("Content-Type %q, want application/json", ct)
		}
		if g.Status == 200 && string(g.Body) != `{"pair":"EURUSD","bid":1.1}` {
			t.Errorf("body %s", g.Body)
		}
		return
	}
	if p := problem(t, g); p.Reason != tc.code {
		t.Errorf("problem code %q, want %q", p.Reason, tc.code)
	}
	if cc := g.header("Cache-Control"); cc != "no-store" {
		t.Errorf("Cache-Control %q on an error answer, want no-store", cc)
	}
}

// withHolder makes the first request of serve hold the lock until the
// returned function's request has been answered: that one waits for it.
func withHolder(t *testing.T, s shape, serve serveFunc, block chan struct{}) serveFunc {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if g := request(t, serve, sample(t, s, samplePair), 10*time.Second); g.Status != 200 {
			t.Errorf("holder status %d, want 200", g.Status)
		}
	}()
	synctest.Wait() // the holder is in the handler
	t.Cleanup(wg.Wait)
	return func(ctx context.Context, event []byte) (got, error) {
		defer close(block)
		return serve(ctx, event)
	}
}

// waitRunsOut is one request that waits for the holder withHolder set up.
func waitRunsOut(t *testing.T, s shape, serve serveFunc) got {
	return request(t, serve, sample(t, s, samplePair), 10*time.Second)
}

// checkRetryAfter fails unless ra is whole seconds (RFC 9110 §10.2.3) no
// fewer than least and spread by at most half of it (at least 2 s), or
// absent when least is 0.
func checkRetryAfter(t *testing.T, ra string, least int64) {
	t.Helper()
	if least == 0 {
		if ra != "" {
			t.Errorf("Retry-After %q, want none", ra)
		}
		return
	}
	n, err := strconv.ParseInt(ra, 10, 64)
	if err != nil || n < least || n > least+max(least/2, 2) {
		t.Errorf("Retry-After %q, want whole seconds in [%d, %d]", ra, least, least+max(least/2, 2))
	}
}
