package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// resource is the parent's HTTP server for the workers: the fenced
// protected resource (/write, /data), the counted upstream (/fetch) and
// freeze requests (/freeze). It is safe for concurrent use.
type resource struct {
	rec *recorder

	// onFetch runs for every upstream fetch before it is answered; it
	// returns true when it killed the caller.
	onFetch func(worker int, key string) bool
	// failing reports whether key belongs to a failing herd round: its
	// fetches are refused with retryAfter for failFor after its first.
	failing func(key string) bool
	// onFreeze runs when a worker returns without releasing.
	onFreeze func(worker int)

	mu         sync.Mutex       // guards the fields below
	maxFence   map[string]int64 // highest fence accepted per key
	shadow     map[string]int64 // fence of the last write per key, unfenced
	failUntil  int64            // Mono: the upstream fails every call until then
	retryAfter time.Duration    // of a failing stretch: 429 with this Retry-After, or 503 without when 0
	firstAt    map[string]int64 // first fetch per key of a failing herd round

	ln  net.Listener
	srv *http.Server
}

func newResource(rec *recorder) (*resource, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("chaos: resource listen: %w", err)
	}
	r := &resource{rec: rec, maxFence: map[string]int64{}, shadow: map[string]int64{}, firstAt: map[string]int64{}, ln: ln}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /write", r.handleWrite)
	mux.HandleFunc("POST /fetch", r.handleFetch)
	mux.HandleFunc("GET /data", r.handleData)
	mux.HandleFunc("POST /freeze", r.handleFreeze)
	r.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go r.srv.Serve(ln)
	return r, nil
}

func (r *resource) URL() string { return "http://" + r.ln.Addr().String() }

func (r *resource) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = r.srv.Shutdown(ctx)
	_ = r.srv.Close()
}

func qInt(req *http.Request, name string) int64 {
	v, _ := strconv.ParseInt(req.URL.Query().Get(name), 10, 64)
	return v
}

// handleWrite accepts a write iff its fence is at least the highest seen
// for the key; the shadow copy takes every write and notes when it went
// back to an older fence.
func (r *resource) handleWrite(w http.ResponseWriter, req *http.Request) {
	q := req.URL.Query()
	wr := Write{TCheck: qInt(req, "check"), Worker: int(qInt(req, "w")), Key: q.Get("key"), Fence: qInt(req, "fence"), Rev: q.Get("rev")}
	r.mu.Lock()
	wr.T = Mono()
	wr.MaxSeen = r.maxFence[wr.Key]
	if prev, ok := r.shadow[wr.Key]; ok && wr.Fence < prev {
		wr.Shadow = true
	}
	r.shadow[wr.Key] = wr.Fence
	if wr.Fence >= wr.MaxSeen {
		wr.Accepted = true
		r.maxFence[wr.Key] = wr.Fence
	}
	r.rec.write(wr) // under mu, so the log order is the acceptance order
	r.mu.Unlock()
	json.NewEncoder(w).Encode(map[string]bool{"accepted": wr.Accepted})
}

// failUpstream makes the upstream fail every call until Mono reaches
// until: with 429 and retryAfter (whole seconds), or with 503 and no
// Retry-After when retryAfter is 0.
func (r *resource) failUpstream(until int64, retryAfter time.Duration) {
	r.mu.Lock()
	r.failUntil, r.retryAfter = until, retryAfter
	r.mu.Unlock()
}

func (r *resource) handleFetch(w http.ResponseWriter, req *http.Request) {
	worker, key := int(qInt(req, "w")), req.URL.Query().Get("key")
	f := Fetch{T: Mono(), Worker: worker, Key: key, Rev: req.URL.Query().Get("rev")}
	f.Status, f.RetryAfter = r.answer(key, f.T)
	if f.Status == http.StatusOK && r.onFetch != nil && r.onFetch(worker, key) {
		f.Killed = true
	}
	r.rec.fetch(f)
	if f.Status != http.StatusOK {
		if f.RetryAfter > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(int(f.RetryAfter/time.Second)))
		}
		http.Error(w, "upstream failing", f.Status)
		return
	}
	json.NewEncoder(w).Encode(map[string]string{"data": "upstream:" + key})
}

// answer returns the upstream's status for a fetch of key at t, and the
// Retry-After of a refusal: a failing stretch of a storm phase fails every
// call, a failing herd round refuses its key's first calls.
func (r *resource) answer(key string, t int64) (int, time.Duration) {
	r.mu.Lock()
	until, retryAfter := r.failUntil, r.retryAfter
	r.mu.Unlock()
	switch {
	case t < until && retryAfter > 0:
		return http.StatusTooManyRequests, retryAfter
	case t < until:
		return http.StatusServiceUnavailable, 0
	}
	if ra := r.refusal(key, t); ra > 0 {
		return http.StatusTooManyRequests, ra
	}
	return http.StatusOK, 0
}

// Failing herd rounds: the upstream refuses a key's fetches for failFor
// after its first, asking each time for failRetryAfter, as an API
// answering 429 with Retry-After does.
const (
	failFor        = 1500 * time.Millisecond
	failRetryAfter = time.Second
)

// refusal returns the wait the upstream asks for when it refuses a fetch
// of key at t in a failing herd round, or 0 when it serves it.
func (r *resource) refusal(key string, t int64) time.Duration {
	if r.failing == nil || !r.failing(key) {
		return 0
	}
	r.mu.Lock()
	first, seen := r.firstAt[key]
	if !seen {
		first = t
		r.firstAt[key] = t
	}
	r.mu.Unlock()
	if time.Duration(t-first) < failFor {
		return failRetryAfter
	}
	return 0
}

func (r *resource) handleData(w http.ResponseWriter, req *http.Request) {
	key := req.URL.Query().Get("key")
	r.mu.Lock()
	fence, ok := r.maxFence[key]
	r.mu.Unlock()
	json.NewEncoder(w).Encode(map[string]any{"present": ok, "fence": fence})
}

func (r *resource) handleFreeze(w http.ResponseWriter, req *http.Request) {
	w.WriteHeader(http.StatusNoContent)
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	if r.onFreeze != nil {
		r.onFreeze(int(qInt(req, "w")))
	}
}
