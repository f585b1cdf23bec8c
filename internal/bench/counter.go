package bench

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Counter is an http.RoundTripper that counts the DynamoDB requests passing
// through it by operation (the X-Amz-Target header, less its
// "DynamoDB_20120810." prefix) and keeps the time of every GetItem, so that
// the read rate on a lock item can be computed per window.
//
// A GetItem whose context carries the [FallbackRead] mark is counted apart:
// it is the read that DynamoStore makes after a failed conditional write on
// a server that returns no item with the failure (dynalite; not Dynoxide,
// on which the figures run). DynamoDB
// returns that item inside the failed write (ReturnValuesOnConditionCheckFailure),
// so those reads do not happen there.
//
// Counter is safe for concurrent use.
type Counter struct {
	next http.RoundTripper

	mu        sync.Mutex // guards the fields below
	byOp      map[string]int
	reads     []time.Time // GetItem requests, fallback reads excluded
	fallbacks int
	firstDone time.Time // when the first response arrived
}

// FirstDone returns when the first response through c arrived, or the zero
// time.
func (c *Counter) FirstDone() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.firstDone
}

// NewCounter returns a Counter sending requests on through next.
func NewCounter(next http.RoundTripper) *Counter {
	return &Counter{next: next, byOp: map[string]int{}}
}

type fallbackKey struct{}

// FallbackRead marks ctx so that a GetItem made with it is counted as a
// read after a failed condition rather than as a poll.
func FallbackRead(ctx context.Context) context.Context {
	return context.WithValue(ctx, fallbackKey{}, true)
}

// RoundTrip implements http.RoundTripper.
func (c *Counter) RoundTrip(req *http.Request) (*http.Response, error) {
	op := strings.TrimPrefix(req.Header.Get("X-Amz-Target"), "DynamoDB_20120810.")
	if op == "" {
		op = "other"
	}
	c.mu.Lock()
	c.byOp[op]++
	if op == "GetItem" {
		if req.Context().Value(fallbackKey{}) != nil {
			c.fallbacks++
		} else {
			c.reads = append(c.reads, time.Now())
		}
	}
	c.mu.Unlock()
	resp, err := c.next.RoundTrip(req)
	c.mu.Lock()
	if c.firstDone.IsZero() {
		c.firstDone = time.Now()
	}
	c.mu.Unlock()
	return resp, err
}

// Snapshot is the state of a Counter at one moment.
type Snapshot struct {
	ByOp      map[string]int
	Reads     int // GetItem requests other than fallback reads
	Fallbacks int // GetItem requests after a failed condition
	At        time.Time
	readIdx   int
}

// Snapshot returns the counts so far.
func (c *Counter) Snapshot() Snapshot {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := make(map[string]int, len(c.byOp))
	for k, v := range c.byOp {
		m[k] = v
	}
	return Snapshot{ByOp: m, Reads: len(c.reads), Fallbacks: c.fallbacks, At: time.Now(), readIdx: len(c.reads)}
}

// Delta is what a Counter counted between two snapshots.
type Delta struct {
	ByOp      map[string]int `json:"byOp"`
	Total     int            `json:"total"`
	Fallbacks int            `json:"fallbackReads"`
}

// Since returns the requests counted since s.
func (c *Counter) Since(s Snapshot) Delta {
	now := c.Snapshot()
	d := Delta{ByOp: map[string]int{}, Fallbacks: now.Fallbacks - s.Fallbacks}
	for k, v := range now.ByOp {
		if n := v - s.ByOp[k]; n > 0 {
			d.ByOp[k] = n
			d.Total += n
		}
	}
	return d
}

// ReadRates returns the largest number of reads (fallback reads excluded)
// that started in any window of length w since s, scaled to reads per
// second, and the mean rate of those reads from the first to the last.
// Windows are aligned on s.At.
func (c *Counter) ReadRates(s Snapshot, w time.Duration) (peak, mean float64) {
	c.mu.Lock()
	reads := append([]time.Time(nil), c.reads[s.readIdx:]...)
	c.mu.Unlock()
	counts := map[int64]int{}
	most := 0
	for _, t := range reads {
		i := int64(t.Sub(s.At) / w)
		counts[i]++
		most = max(most, counts[i])
	}
	peak = float64(most) * float64(time.Second) / float64(w)
	if len(reads) > 1 {
		if span := reads[len(reads)-1].Sub(reads[0]); span > 0 {
			mean = float64(len(reads)-1) / span.Seconds()
		}
	}
	return peak, mean
}

// errKilled is what a killed actor's requests fail with.
var errKilled = errors.New("bench: process killed (no network)")

// killable is an http.RoundTripper that fails every request once killed: a
// model of a process that died, whose renewals and releases never arrive.
type killable struct {
	next http.RoundTripper
	dead atomic.Bool
}

func (k *killable) RoundTrip(req *http.Request) (*http.Response, error) {
	if k.dead.Load() {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, errKilled
	}
	return k.next.RoundTrip(req)
}
