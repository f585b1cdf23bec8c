package chaos

import (
	"bufio"
	"encoding/json"
	"os"
	"sync"
	"time"
)

// StoreOp is one request that the proxy forwarded to Dynoxide, with the
// server's answer. The proxy sees every response, so no store operation has
// an unknown outcome.
type StoreOp struct {
	ID      int64   `json:"id"`
	Worker  int     `json:"w"`
	Target  string  `json:"target"` // DynamoDB operation, from X-Amz-Target
	Key     string  `json:"key"`    // partition key value
	Intent  *Intent `json:"intent,omitempty"`
	Call    int64   `json:"call"`   // Mono just before forwarding
	Return  int64   `json:"return"` // Mono when the server's response was read
	Status  int     `json:"status"` // 0: no response (transport error)
	ErrType string  `json:"err,omitempty"`
	Item    *View   `json:"item,omitempty"`    // Attributes or Item of the response
	PutRev  string  `json:"putRev,omitempty"`  // PutItem: the revision written (seed protocol)
	Expr    string  `json:"expr,omitempty"`    // UpdateItem: the update expression (seed protocol)
	CondRev string  `json:"condRev,omitempty"` // UpdateItem: the :rev value (seed protocol)
	Dup     bool    `json:"dup,omitempty"`     // the second copy of a duplicated request
}

// Fault is one injected fault.
type Fault struct {
	T      int64  `json:"t"`
	Worker int    `json:"w"`
	Kind   string `json:"kind"`
	Until  int64  `json:"until,omitempty"` // end of a partition or freeze
	Detail string `json:"detail,omitempty"`
	ReqID  int64  `json:"req,omitempty"`
}

// Fault kinds.
const (
	FaultSmallDelay     = "delay-small"
	FaultDelayBefore    = "delay-before"
	FaultDelayAfter     = "delay-after"
	FaultDropBefore     = "drop-before"
	FaultDropAfter      = "drop-after-applied"
	FaultDuplicate      = "duplicate"
	FaultThrottleCRC    = "throttle-crc"
	FaultThrottleNoCRC  = "throttle-nocrc"
	FaultPartition      = "partition"
	FaultPartitionResp  = "partition-responses"
	FaultPartitionDrop  = "partitioned-request"
	FaultFreeze         = "freeze"
	FaultFreezeReturned = "freeze-after-return"
	FaultKill           = "kill"
	// Storm phases.
	FaultBrownout      = "brownout"       // a stretch of every proxy's brownout (Worker -1): T to Until
	FaultBrownoutDelay = "brownout-delay" // one request delayed by a brownout
	FaultOperator      = "operator-release"
	FaultUpstream      = "upstream-failing" // a stretch of the failing upstream: T to Until
)

// Event is something a worker did, stamped with Mono by the worker.
type Event struct {
	T        int64  `json:"t"`
	T2       int64  `json:"t2,omitempty"` // end of a wait or release
	Worker   int    `json:"w"`
	Inc      int    `json:"inc"`
	Kind     string `json:"k"`
	Key      string `json:"key,omitempty"`
	Outcome  string `json:"o,omitempty"`
	Fence    int64  `json:"f,omitempty"`
	Rev      string `json:"rev,omitempty"`
	TookOver bool   `json:"took,omitempty"`
	// Announced: a RELEASED wait learned the success from a release
	// announcement rather than from the lock item.
	Announced bool   `json:"ann,omitempty"`
	Present   bool   `json:"present,omitempty"`
	Err       string `json:"err,omitempty"`
	// Metrics are the lockcore counters (unit Count, non-zero sums) the
	// worker's Locks recorded since its previous wait or release event:
	// on a wait, the wait's; on a release, the hold's and the release's.
	Metrics map[string]float64 `json:"m,omitempty"`
}

// Worker event kinds.
const (
	EvWait    = "wait"    // TryAcquireElseWaitForRelease: T start, T2 end, Outcome
	EvRelease = "release" // Release: T start, T2 end, Outcome = result, Err
	EvRead    = "read"    // after RELEASED: whether the data was there
	EvStart   = "start"   // the worker process started
	// EvOperator is an operator force-release made by the parent (Worker
	// is the holder aimed at): Outcome released, refused, skipped or error.
	EvOperator = "operator"
)

// Write is one write that reached the protected resource.
type Write struct {
	T        int64  `json:"t"`     // Mono when the resource judged it
	TCheck   int64  `json:"check"` // Mono stamped by the worker just before its validity check
	Worker   int    `json:"w"`
	Key      string `json:"key"`
	Fence    int64  `json:"f"`
	Rev      string `json:"rev"`
	Accepted bool   `json:"ok"`
	MaxSeen  int64  `json:"max"`
	Shadow   bool   `json:"shadowStale,omitempty"` // the unfenced copy took a write older than what it held
}

// Fetch is one call of the counted upstream.
type Fetch struct {
	T      int64  `json:"t"`
	Worker int    `json:"w"`
	Key    string `json:"key"`
	Rev    string `json:"rev,omitempty"` // the caller's revision
	Killed bool   `json:"killed,omitempty"`
	// Status is the upstream's answer: 200, or a failure (429 with
	// RetryAfter, 503 without) in a failing stretch of a storm phase or
	// a failing herd round.
	Status int `json:"status"`
	// RetryAfter is set when the upstream refused the call, asking for
	// this wait (a 429 with Retry-After).
	RetryAfter time.Duration `json:"retryAfter,omitempty"`
}

// recorder collects everything a run produces. It is safe for concurrent
// use.
type recorder struct {
	mu      sync.Mutex // guards the slices and the log
	ops     []StoreOp
	faults  []Fault
	events  []Event
	writes  []Write
	fetches []Fetch
	log     *bufio.Writer
	logFile *os.File
	nextID  int64
}

func newRecorder(path string) (*recorder, error) {
	r := &recorder{}
	if path != "" {
		f, err := os.Create(path)
		if err != nil {
			return nil, err
		}
		r.logFile, r.log = f, bufio.NewWriterSize(f, 1<<16)
	}
	return r, nil
}

func (r *recorder) logLocked(kind string, v any) {
	if r.log == nil {
		return
	}
	b, _ := json.Marshal(struct {
		Kind string `json:"rec"`
		V    any    `json:"v"`
	}{kind, v})
	r.log.Write(b)
	r.log.WriteByte('\n')
}

func (r *recorder) id() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.nextID++
	return r.nextID
}

func (r *recorder) op(o StoreOp) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ops = append(r.ops, o)
	r.logLocked("op", o)
}

func (r *recorder) fault(f Fault) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.faults = append(r.faults, f)
	r.logLocked("fault", f)
}

func (r *recorder) event(e Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
	r.logLocked("event", e)
}

func (r *recorder) write(w Write) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.writes = append(r.writes, w)
	r.logLocked("write", w)
}

func (r *recorder) fetch(f Fetch) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fetches = append(r.fetches, f)
	r.logLocked("fetch", f)
}

func (r *recorder) note(kind string, v any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.logLocked(kind, v)
}

func (r *recorder) close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.log == nil {
		return nil
	}
	if err := r.log.Flush(); err != nil {
		return err
	}
	return r.logFile.Close()
}
