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
	// Arrive is Mono when the request reached the proxy, before any delay;
	// Answer is Mono when the proxy sent the worker the server's answer
	// (after the delays after forwarding), 0 when it sent none (Lost: a
	// reset, a hang, a 500 of its own, or the second copy of a duplicate).
	// Gone: the worker had given up on the request by then (its context
	// ended), so the answer told it nothing.
	Arrive int64 `json:"arrive,omitempty"`
	Answer int64 `json:"answer,omitempty"`
	Lost   bool  `json:"lost,omitempty"`
	Gone   bool  `json:"gone,omitempty"`
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
	// FaultBrownoutStretch is a storm's long brownout (Worker -1): every
	// answer between 1× and 3× the attempt timeout from T to Until.
	FaultBrownoutStretch = "brownout-stretch"
	// FaultMisconfig is a storm's misconfiguration stretch (Worker -1):
	// from T to Until the workers' role may not write the table, and
	// every write is answered with AccessDeniedException.
	FaultMisconfig = "misconfig"
	// FaultAccessDenied is one write answered with AccessDeniedException
	// in a misconfiguration stretch (T is when the proxy answered; Detail
	// is the item's key and the operation).
	FaultAccessDenied = "access-denied"
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
	// Cause classifies a wait's error (waitTimeout, holderFailed,
	// storeError, noTimeLeft, other) and, on an EvValid event, the cause
	// of the holder's context when Valid() turned false.
	Cause string `json:"cause,omitempty"`
	// NotBeforeMs is the time a FAILED wait was told it may try again
	// (HolderFailedError.NotBefore, Unix milliseconds), 0 when none.
	NotBeforeMs int64 `json:"nb,omitempty"`
	// BackMs is set on the wait of an invocation that came back at the
	// not-before it was told (Unix milliseconds): the time it was told.
	BackMs int64 `json:"back,omitempty"`
	// Until is, on an EvValid event, the first sample at which Valid()
	// was false (0: the hold's release came first, Valid() still true).
	Until int64 `json:"until,omitempty"`
	// Metrics are the lockcore counters (unit Count, non-zero sums) the
	// worker's Locks recorded since its previous wait or release event:
	// on a wait, the wait's; on a release, the hold's and the release's.
	Metrics map[string]float64 `json:"m,omitempty"`
	// Run, Payload and AnsPayload are an idempotent operation's (EvIdemRun,
	// EvIdemCall): the run's name, the delivery's payload, the payload of
	// the run whose answer the delivery got.
	Run        string `json:"run,omitempty"`
	Payload    string `json:"pay,omitempty"`
	AnsPayload string `json:"apay,omitempty"`
}

// Worker event kinds.
const (
	EvWait    = "wait"    // TryAcquireElseWaitForRelease: T start, T2 end, Outcome
	EvRelease = "release" // Release: T start, T2 end, Outcome = result, Err
	EvRead    = "read"    // after RELEASED: whether the data was there
	EvStart   = "start"   // the worker process started
	// EvValid is a hold's Valid() as sampled by its worker: T the first
	// sample that was true (after the call), T2 the last that was true
	// (before the call), Until the first that was false, Cause the
	// context's cause then, Rev and Fence the hold's.
	EvValid = "valid"
	// EvStall is a stretch from T to T2 in which the worker process got
	// no CPU (its lateness monitor woke that late): the machine, not the
	// lock, held it up, and the contract's timing checks do not judge it
	// there.
	EvStall = "stall"
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
