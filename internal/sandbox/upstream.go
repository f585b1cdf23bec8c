package sandbox

import (
	"encoding/json"
	"hash/fnv"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
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
	// ThrottleFirst, when positive, makes the upstream answer 429 to every
	// request for an item that arrives within ThrottleFirst of that item's
	// first request, as an API does while it sheds load on one key. 0 means
	// no such throttling.
	ThrottleFirst time.Duration
	// RetryAfter is the wait the 429 answers of ThrottleFirst ask for. 0
	// means the time left until the item's throttling ends, rounded up to
	// whole seconds (at least 1).
	RetryAfter time.Duration
	// FailStatus is the status of the answers of ThrottleFirst. Default
	// 429; a 5xx status stands for an upstream that is down.
	FailStatus int
	// NoRetryAfter leaves the Retry-After header out of the answers of
	// ThrottleFirst.
	NoRetryAfter bool
	// ThrottleItems, when not empty, limits ThrottleFirst to these items:
	// the others are answered as if ThrottleFirst were 0.
	ThrottleItems []string
	// RetryAfterDate makes every 429 answer carry Retry-After as an HTTP
	// date (the time of the answer plus the wait, rounded up to the next
	// whole second) instead of delay-seconds.
	RetryAfterDate bool
}

// Upstream is a local HTTP API that stands for a rate-limited third-party
// service: GET /{item} answers a JSON quote for item after the configured
// latency, and POST /orders creates an order from its JSON body (201 with
// an [Order]), a side effect that [Upstream.Orders] counts. It counts every
// request; the rate limit, ThrottleFirst (item "orders") and the latency
// apply to both. It is safe for concurrent use.
type Upstream struct {
	srv *httptest.Server
	cfg UpstreamConfig
	now func() time.Time // the clock of the answers; tests set it before the first request

	mu          sync.Mutex // guards the fields below
	requests    int
	perItem     map[string]int
	firstAt     map[string]time.Time // first request per item, for ThrottleFirst
	rejected    int
	windowStart time.Time
	inWindow    int
	stall       *stall // applies to the next request, nil when none
	arrivals    []Arrival
	orders      []Order
}

// OrdersItem is the item name of POST /orders in [Arrival] and
// [UpstreamConfig].ThrottleItems.
const OrdersItem = "orders"

// maxOrderBytes bounds an order's body.
const maxOrderBytes = 64 << 10

// Order is the JSON document POST /orders answers: the order it created.
type Order struct {
	ID   string          `json:"orderId"`
	Seq  int             `json:"seq"` // the upstream's request counter when it created the order
	AtMs int64           `json:"atMs"`
	Body json.RawMessage `json:"request"` // the request's body, as sent
}

// Arrival records one request the upstream received.
type Arrival struct {
	Item     string
	At       time.Time
	Rejected bool // answered 429, or FailStatus within ThrottleFirst
	// Status is the answer's status code.
	Status int
	// RetryAfter is the Retry-After header of a rejected request, as sent.
	RetryAfter string
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
	if cfg.FailStatus == 0 {
		cfg.FailStatus = http.StatusTooManyRequests
	}
	u := &Upstream{cfg: cfg, now: time.Now, perItem: make(map[string]int), firstAt: make(map[string]time.Time)}
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

// ArrivalsFor returns the requests for item received so far, in order.
func (u *Upstream) ArrivalsFor(item string) []Arrival {
	u.mu.Lock()
	defer u.mu.Unlock()
	var out []Arrival
	for _, a := range u.arrivals {
		if a.Item == item {
			out = append(out, a)
		}
	}
	return out
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

// Orders returns the orders created so far, in order. An order whose
// client went away before the answer is created all the same, as a real
// API's would be.
func (u *Upstream) Orders() []Order {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]Order(nil), u.orders...)
}

func (u *Upstream) serve(w http.ResponseWriter, r *http.Request) {
	item := strings.TrimPrefix(r.URL.Path, "/")
	var order []byte
	switch {
	case r.Method == http.MethodPost && item == OrdersItem:
		b, err := io.ReadAll(io.LimitReader(r.Body, maxOrderBytes+1))
		if err != nil || len(b) > maxOrderBytes || !json.Valid(b) {
			http.Error(w, "POST /orders takes a JSON body of at most 64 KiB", http.StatusBadRequest)
			return
		}
		order = b
	case r.Method != http.MethodGet || item == "" || strings.Contains(item, "/"):
		http.Error(w, "GET /{item} or POST /orders", http.StatusNotFound)
		return
	}
	u.mu.Lock()
	now := u.now()
	u.requests++
	seq := u.requests
	u.perItem[item]++
	limited, status, wait := u.throttled(item, now)
	var retryAfter string
	if limited {
		u.rejected++
		if wait > 0 {
			retryAfter = u.retryAfterHeader(now, wait)
		}
	}
	u.arrivals = append(u.arrivals, Arrival{Item: item, At: now, Rejected: limited, Status: status, RetryAfter: retryAfter})
	st := u.stall
	if !limited {
		u.stall = nil
	}
	var created Order
	if order != nil && !limited {
		created = Order{ID: "order-" + strconv.Itoa(len(u.orders)+1), Seq: seq, AtMs: now.UnixMilli(), Body: order}
		u.orders = append(u.orders, created)
	}
	u.mu.Unlock()

	if limited {
		if retryAfter != "" {
			w.Header().Set("Retry-After", retryAfter)
		}
		http.Error(w, http.StatusText(status), status)
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
	if order != nil {
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(created)
		return
	}
	_ = json.NewEncoder(w).Encode(Quote{Pair: item, Rate: rateFor(item), Seq: seq, AtMs: time.Now().UnixMilli()})
}

// throttled says whether the request for item arriving at now is refused,
// with which status, and the wait to ask for (0: no Retry-After). It counts
// the request in the rate limit's window. u.mu must be held.
func (u *Upstream) throttled(item string, now time.Time) (refused bool, status int, wait time.Duration) {
	first, seen := u.firstAt[item]
	if !seen {
		first = now
		u.firstAt[item] = now
	}
	selected := len(u.cfg.ThrottleItems) == 0 || slices.Contains(u.cfg.ThrottleItems, item)
	if left := first.Add(u.cfg.ThrottleFirst).Sub(now); left > 0 && selected {
		switch {
		case u.cfg.NoRetryAfter:
			wait = 0
		case u.cfg.RetryAfter > 0:
			wait = u.cfg.RetryAfter
		default:
			wait = left
		}
		return true, u.cfg.FailStatus, wait
	}
	if now.Sub(u.windowStart) >= u.cfg.Window {
		u.windowStart, u.inWindow = now, 0
	}
	u.inWindow++
	if u.cfg.Limit > 0 && u.inWindow > u.cfg.Limit {
		return true, http.StatusTooManyRequests, max(u.windowStart.Add(u.cfg.Window).Sub(now), time.Nanosecond)
	}
	return false, http.StatusOK, 0
}

// retryAfterHeader formats a wait as a Retry-After value: whole seconds,
// rounded up and at least 1, or an HTTP date with RetryAfterDate.
func (u *Upstream) retryAfterHeader(now time.Time, wait time.Duration) string {
	if u.cfg.RetryAfterDate {
		at := now.Add(wait)
		if t := at.Truncate(time.Second); t.Before(at) {
			at = t.Add(time.Second)
		}
		return at.UTC().Format(http.TimeFormat)
	}
	return strconv.Itoa(max(1, int(math.Ceil(wait.Seconds()))))
}

// rateFor returns a stable made-up rate for item.
func rateFor(item string) float64 {
	h := fnv.New32a()
	h.Write([]byte(item))
	return 0.5 + float64(h.Sum32()%10000)/10000
}
