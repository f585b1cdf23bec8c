package sandbox

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func get(t *testing.T, url string) (*http.Response, Quote) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var q Quote
	if resp.StatusCode == http.StatusOK {
		if err := json.NewDecoder(resp.Body).Decode(&q); err != nil {
			t.Fatal(err)
		}
	}
	return resp, q
}

func TestUpstreamCountsAndRateLimits(t *testing.T) {
	u := StartUpstream(UpstreamConfig{Limit: 2, Window: time.Hour})
	defer u.Close()
	for i, want := range []int{200, 200, 429} {
		resp, q := get(t, u.URL()+"/EUR-USD")
		if resp.StatusCode != want {
			t.Fatalf("request %d: status %d, want %d", i+1, resp.StatusCode, want)
		}
		if want == 200 && (q.Pair != "EUR-USD" || q.Seq != i+1) {
			t.Errorf("request %d: quote %+v", i+1, q)
		}
		if want == 429 && resp.Header.Get("Retry-After") == "" {
			t.Errorf("429 without Retry-After")
		}
	}
	if u.Requests() != 3 || u.RequestsFor("EUR-USD") != 3 || u.Rejected() != 1 || len(u.Arrivals()) != 3 {
		t.Errorf("Requests() = %d, RequestsFor() = %d, Rejected() = %d, want 3, 3, 1", u.Requests(), u.RequestsFor("EUR-USD"), u.Rejected())
	}
}

func TestUpstreamStallNext(t *testing.T) {
	u := StartUpstream(UpstreamConfig{})
	defer u.Close()
	arrived := u.StallNext(300 * time.Millisecond)
	done := make(chan time.Duration, 1)
	go func() {
		start := time.Now()
		get(t, u.URL()+"/A")
		done <- time.Since(start)
	}()
	<-arrived
	if d := <-done; d < 300*time.Millisecond {
		t.Errorf("stalled request took %v, want at least 300ms", d)
	}
	start := time.Now()
	get(t, u.URL()+"/A")
	if d := time.Since(start); d >= 300*time.Millisecond {
		t.Errorf("the request after the stalled one took %v: the stall should apply once", d)
	}
}

func TestCountingProxyCountsOperations(t *testing.T) {
	backend := StartUpstream(UpstreamConfig{})
	defer backend.Close()
	p, err := StartCountingProxy(backend.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for _, op := range []string{"GetItem", "GetItem", "UpdateItem"} {
		req, _ := http.NewRequest(http.MethodGet, p.URL()+"/X", nil)
		req.Header.Set("X-Amz-Target", "DynamoDB_20120810."+op)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if c := p.Counts(); c["GetItem"] != 2 || c["UpdateItem"] != 1 || p.Total() != 3 || backend.Requests() != 3 {
		t.Errorf("Counts() = %v, Total() = %d, backend saw %d; want GetItem 2, UpdateItem 1, 3, 3", c, p.Total(), backend.Requests())
	}
	p.Reset()
	if p.Total() != 0 {
		t.Errorf("Total() after Reset = %d", p.Total())
	}
}

func TestRIEPathMissingSaysMakeDeps(t *testing.T) {
	t.Setenv(RIEEnv, "/nonexistent/aws-lambda-rie")
	if _, err := RIEPath(); err == nil || !strings.Contains(err.Error(), "run make deps") {
		t.Errorf("RIEPath() = %v, want an error saying run make deps", err)
	}
}

// fakeClock is a settable clock for the upstream's answers.
type fakeClock struct {
	mu sync.Mutex // guards t
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// startClocked starts an upstream whose answers use a fake clock.
func startClocked(t *testing.T, cfg UpstreamConfig) (*Upstream, *fakeClock) {
	t.Helper()
	clk := &fakeClock{t: time.Date(2026, 12, 1, 10, 0, 0, 300e6, time.UTC)}
	u := StartUpstream(cfg)
	u.now = clk.now
	t.Cleanup(u.Close)
	return u, clk
}

func TestUpstreamThrottleFirst(t *testing.T) {
	type step struct {
		after      time.Duration // clock advance before the request
		item       string
		status     int
		retryAfter string
	}
	at := func(d time.Duration) string {
		return time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC).Add(d).Format(http.TimeFormat)
	}
	tests := []struct {
		name  string
		cfg   UpstreamConfig
		steps []step
	}{
		{
			name: "fixed Retry-After in seconds, per item",
			cfg:  UpstreamConfig{ThrottleFirst: 3 * time.Second, RetryAfter: 2 * time.Second},
			steps: []step{
				{0, "A", 429, "2"},
				{2 * time.Second, "A", 429, "2"},
				{500 * time.Millisecond, "B", 429, "2"}, // B's own window starts now
				{500 * time.Millisecond, "A", 200, ""},  // 3 s after A's first request
				{2 * time.Second, "B", 429, "2"},
				{time.Second, "B", 200, ""},
			},
		},
		{
			name: "Retry-After is the time left, rounded up",
			cfg:  UpstreamConfig{ThrottleFirst: 8 * time.Second},
			steps: []step{
				{0, "A", 429, "8"},
				{2500 * time.Millisecond, "A", 429, "6"},
				{5400 * time.Millisecond, "A", 429, "1"},
				{100 * time.Millisecond, "A", 200, ""},
			},
		},
		{
			name: "Retry-After as an HTTP date, rounded up to the second",
			cfg:  UpstreamConfig{ThrottleFirst: 3 * time.Second, RetryAfter: 2 * time.Second, RetryAfterDate: true},
			steps: []step{
				{0, "A", 429, at(3 * time.Second)}, // 10:00:00.3 + 2 s = 10:00:02.3, rounded up
				{time.Second, "A", 429, at(4 * time.Second)},
				{2 * time.Second, "A", 200, ""},
			},
		},
		{
			name: "only the items named",
			cfg:  UpstreamConfig{ThrottleFirst: 3 * time.Second, RetryAfter: time.Second, FailStatus: 503, ThrottleItems: []string{"B"}},
			steps: []step{
				{0, "A", 200, ""},
				{0, "B", 503, "1"},
				{3 * time.Second, "B", 200, ""},
			},
		},
		{
			name: "a 503 without Retry-After",
			cfg:  UpstreamConfig{ThrottleFirst: time.Second, FailStatus: 503, NoRetryAfter: true},
			steps: []step{
				{0, "A", 503, ""},
				{time.Second, "A", 200, ""},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, clk := startClocked(t, tt.cfg)
			var want []Arrival
			for i, s := range tt.steps {
				clk.advance(s.after)
				resp, q := get(t, u.URL()+"/"+s.item)
				if resp.StatusCode != s.status || resp.Header.Get("Retry-After") != s.retryAfter {
					t.Fatalf("request %d (%s): status %d, Retry-After %q; want %d, %q",
						i+1, s.item, resp.StatusCode, resp.Header.Get("Retry-After"), s.status, s.retryAfter)
				}
				if s.status == 200 && q.Pair != s.item {
					t.Errorf("request %d: quote %+v, want one for %s", i+1, q, s.item)
				}
				if s.item == "A" {
					want = append(want, Arrival{Item: "A", At: clk.now(), Rejected: s.status != 200, Status: s.status, RetryAfter: s.retryAfter})
				}
			}
			if got := u.ArrivalsFor("A"); !slices.Equal(got, want) {
				t.Errorf("ArrivalsFor(A) = %+v, want %+v", got, want)
			}
			if got := u.RequestsFor("A"); got != len(want) {
				t.Errorf("RequestsFor(A) = %d, want %d", got, len(want))
			}
		})
	}
}

func TestUpstreamThrottleFirstLeavesTheRateLimitAlone(t *testing.T) {
	u, clk := startClocked(t, UpstreamConfig{ThrottleFirst: time.Second, Limit: 1, Window: time.Hour})
	for i := range 3 {
		if resp, _ := get(t, u.URL()+"/A"); resp.StatusCode != 429 {
			t.Fatalf("request %d within ThrottleFirst: status %d, want 429", i+1, resp.StatusCode)
		}
	}
	clk.advance(time.Second)
	for i, want := range []int{200, 429} {
		if resp, _ := get(t, u.URL()+"/A"); resp.StatusCode != want {
			t.Errorf("request %d after ThrottleFirst: status %d, want %d (the throttled ones do not count in the limit)", i+1, resp.StatusCode, want)
		}
	}
	if u.Requests() != 5 || u.Rejected() != 4 {
		t.Errorf("Requests() = %d, Rejected() = %d, want 5, 4", u.Requests(), u.Rejected())
	}
}

func TestIsRuntimeLine(t *testing.T) {
	tests := []struct {
		line string
		want bool
	}{
		{"START RequestId: 1 Version: $LATEST", true},
		{"REPORT RequestId: 1 Duration: 2.00 ms", true},
		{`2026/12/01 11:09:22 {"errorMessage":"fetchcache: EUR-USD: no data","errorType":"UnavailableError"}`, true},
		{`2026/12/01 11:09:22 {"errorMessage":"x"}`, false},
		{`2026/12/01 11:09:22 runtime API client failed`, false},
		{`{"_aws":{"Timestamp":1},"errorMessage":"x","errorType":"y"}`, false},
		{"", false},
	}
	for _, tt := range tests {
		if got := IsRuntimeLine(tt.line); got != tt.want {
			t.Errorf("IsRuntimeLine(%q) = %t, want %t", tt.line, got, tt.want)
		}
	}
}

func TestUpstreamCreatesOrders(t *testing.T) {
	u := StartUpstream(UpstreamConfig{Limit: 2, Window: time.Hour})
	defer u.Close()
	tests := []struct {
		name, method, body string
		want               int
	}{
		{"a JSON body creates an order", http.MethodPost, `{"pair":"EUR-USD","amount":3}`, http.StatusCreated},
		{"a body that is not JSON is refused", http.MethodPost, `amount=3`, http.StatusBadRequest},
		{"GET /orders is no quote of an item", http.MethodGet, "", http.StatusOK},
		{"the rate limit applies to orders too", http.MethodPost, `{"pair":"EUR-USD","amount":4}`, http.StatusTooManyRequests},
	}
	for _, tt := range tests {
		req, _ := http.NewRequest(tt.method, u.URL()+"/orders", strings.NewReader(tt.body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var o Order
		if resp.StatusCode == http.StatusCreated {
			if err := json.NewDecoder(resp.Body).Decode(&o); err != nil {
				t.Fatal(err)
			}
			if o.ID != "order-1" || string(o.Body) != tt.body {
				t.Errorf("%s: order %+v", tt.name, o)
			}
		}
		resp.Body.Close()
		if resp.StatusCode != tt.want {
			t.Errorf("%s: status %d, want %d", tt.name, resp.StatusCode, tt.want)
		}
	}
	if got := u.Orders(); len(got) != 1 || string(got[0].Body) != `{"pair":"EUR-USD","amount":3}` {
		t.Errorf("Orders() = %+v, want the one created", got)
	}
	if got := u.RequestsFor(OrdersItem); got != 3 {
		t.Errorf("RequestsFor(%q) = %d, want the 3 requests that reached the rate limit", OrdersItem, got)
	}
}
