package sandbox

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"
)

// UpstreamConfig configures [StartUpstream].
type UpstreamConfig struct {
	// Latency is how long every answer takes. Default 0.
	Latency time.Duration
	// Limit is how many requests each Window serves; the requests beyond
	// it get 429 with a Retry-After header. 0 means no limit.
	Limit int
	// Window is the rate limit's fixed window. Default one second.
	Window time.Duration
}

// Upstream is a local HTTP API that stands for a rate-limited third-party
// service: GET /{item} answers a JSON quote for item after the configured
// latency, and counts every request. It is safe for concurrent use.
type Upstream struct {
	srv *httptest.Server
	cfg UpstreamConfig

	mu          sync.Mutex // guards the fields below
	requests    int
	perItem     map[string]int
	rejected    int
	windowStart time.Time
	inWindow    int
	stall       *stall // applies to the next request, nil when none
	arrivals    []Arrival
}

// Arrival records one request the upstream received.
type Arrival struct {
	Item     string
	At       time.Time
	Rejected bool
}

type stall struct {
	d       time.Duration
	arrived chan struct{}
}

// Quote is the JSON document the upstream answers.
type Quote struct {
	Pair string  `json:"pair"`
	Rate float64 `json:"rate"`
	Seq  int     `json:"seq"` // the upstream's request counter when it answered
	AtMs int64   `json:"atMs"`
}

// StartUpstream starts an upstream on a loopback port. Close it when done.
func StartUpstream(cfg UpstreamConfig) *Upstream {
	if cfg.Window <= 0 {
		cfg.Window = time.Second
	}
	u := &Upstream{cfg: cfg, perItem: make(map[string]int)}
	u.srv = httptest.NewServer(http.HandlerFunc(u.serve))
	return u
}

// URL returns the upstream's base URL.
func (u *Upstream) URL() string { return u.srv.URL }

// Close stops the upstream, ending stalled requests.
func (u *Upstream) Close() {
	u.srv.CloseClientConnections()
	u.srv.Close()
}

// Requests returns how many requests reached the upstream, rejected ones
// included.
func (u *Upstream) Requests() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.requests
}

// RequestsFor returns how many requests named item.
func (u *Upstream) RequestsFor(item string) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.perItem[item]
}

// Rejected returns how many requests got 429.
func (u *Upstream) Rejected() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.rejected
}

// Arrivals returns the requests received so far, in order.
func (u *Upstream) Arrivals() []Arrival {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]Arrival(nil), u.arrivals...)
}

// StallNext makes the next request take d instead of the configured latency
// (it ends early if its client goes away). The returned channel is closed
// when that request arrives.
func (u *Upstream) StallNext(d time.Duration) <-chan struct{} {
	s := &stall{d: d, arrived: make(chan struct{})}
	u.mu.Lock()
	u.stall = s
	u.mu.Unlock()
	return s.arrived
}

func (u *Upstream) serve(w http.ResponseWriter, r *http.Request) {
	item := strings.TrimPrefix(r.URL.Path, "/")
	if r.Method != http.MethodGet || item == "" || strings.Contains(item, "/") {
		http.Error(w, "GET /{item}", http.StatusNotFound)
		return
	}
	now := time.Now()
	u.mu.Lock()
	u.requests++
	seq := u.requests
	u.perItem[item]++
	if now.Sub(u.windowStart) >= u.cfg.Window {
		u.windowStart, u.inWindow = now, 0
	}
	u.inWindow++
	limited := u.cfg.Limit > 0 && u.inWindow > u.cfg.Limit
	retryAfter := u.windowStart.Add(u.cfg.Window).Sub(now)
	if limited {
		u.rejected++
	}
	u.arrivals = append(u.arrivals, Arrival{Item: item, At: now, Rejected: limited})
	st := u.stall
	if !limited {
		u.stall = nil
	}
	u.mu.Unlock()

	if limited {
		w.Header().Set("Retry-After", fmt.Sprint(int(math.Ceil(retryAfter.Seconds()))))
		http.Error(w, "rate limited", http.StatusTooManyRequests)
		return
	}
	latency := u.cfg.Latency
	if st != nil {
		latency = st.d
		close(st.arrived)
	}
	if latency > 0 {
		t := time.NewTimer(latency)
		select {
		case <-r.Context().Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(Quote{Pair: item, Rate: rateFor(item), Seq: seq, AtMs: time.Now().UnixMilli()})
}

// rateFor returns a stable made-up rate for item.
func rateFor(item string) float64 {
	h := fnv.New32a()
	h.Write([]byte(item))
	return 0.5 + float64(h.Sum32()%10000)/10000
}
