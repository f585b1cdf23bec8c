package sandbox

import (
	"encoding/json"
	"net/http"
	"strings"
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
