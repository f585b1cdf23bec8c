package sandbox

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Headers of the Lambda Runtime API, version 2018-06-01.
const (
	HeaderRequestID   = "Lambda-Runtime-Aws-Request-Id"
	HeaderDeadlineMs  = "Lambda-Runtime-Deadline-Ms"
	HeaderFunctionARN = "Lambda-Runtime-Invoked-Function-Arn"
	HeaderTraceID     = "Lambda-Runtime-Trace-Id"
	HeaderErrorType   = "Lambda-Runtime-Function-Error-Type"
)

const (
	runtimePrefix = "/2018-06-01/runtime/"
	// maxResponseBytes is Lambda's limit on a synchronous response.
	maxResponseBytes = 6 << 20
)

// DefaultFunctionARN is the invoked function ARN of a [RuntimeAPI] whose
// config names none.
const DefaultFunctionARN = "arn:aws:lambda:us-east-1:123456789012:function:lambda-fetch-cache"

// RuntimeAPIConfig configures [StartRuntimeAPI].
type RuntimeAPIConfig struct {
	// Timeout is the function timeout: each invocation's deadline is its
	// hand-out time plus Timeout. Default 10s.
	Timeout time.Duration
	// FunctionARN is sent with every invocation. Default
	// [DefaultFunctionARN].
	FunctionARN string
}

// RuntimeAPI is a Lambda Runtime API server (version 2018-06-01) for one
// execution environment that may run several invocations at once, as
// Lambda Managed Instances do: any number of GET .../invocation/next may
// wait at the same time, each gets its own invocation, and responses are
// matched to invocations by request id. It serves
//
//   - GET /2018-06-01/runtime/invocation/next: blocks until an invocation
//     is queued, then answers its payload with the request-id, deadline,
//     invoked-function-ARN and trace-id headers;
//   - POST /2018-06-01/runtime/invocation/{id}/response and .../{id}/error:
//     202, or 400 for an id not in progress (unknown, already answered or
//     timed out), 413 for a response over 6 MiB;
//   - POST /2018-06-01/runtime/init/error: 202; every invocation after it
//     fails with that error.
//
// It is safe for concurrent use.
type RuntimeAPI struct {
	cfg    RuntimeAPIConfig
	ln     net.Listener
	srv    *http.Server
	queue  chan *pending
	closed chan struct{}

	mu        sync.Mutex // guards the fields below
	active    map[string]*pending
	waiting   int // GET next requests waiting now
	inFlight  int // invocations handed out and not answered
	maxFlight int
	handedOut int
	initErr   []byte // the body of POST init/error, nil when none
	initType  string
	closeOnce sync.Once
}

// pending is one invocation between Invoke and its answer.
type pending struct {
	id      string
	payload []byte
	trace   string
	result  chan answer // buffered 1
}

type answer struct {
	body      []byte
	errorType string
	isError   bool
}

// StartRuntimeAPI starts the server on a free loopback port. Close it when
// done.
func StartRuntimeAPI(cfg RuntimeAPIConfig) (*RuntimeAPI, error) {
	if cfg.Timeout == 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.Timeout < 0 {
		return nil, fmt.Errorf("sandbox: runtime API: negative timeout %v", cfg.Timeout)
	}
	if cfg.FunctionARN == "" {
		cfg.FunctionARN = DefaultFunctionARN
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("sandbox: runtime API: %w", err)
	}
	a := &RuntimeAPI{
		cfg:    cfg,
		ln:     ln,
		queue:  make(chan *pending, 4096),
		closed: make(chan struct{}),
		active: make(map[string]*pending),
	}
	a.srv = &http.Server{Handler: a, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = a.srv.Serve(ln) }()
	return a, nil
}

// Addr returns host:port, the value of AWS_LAMBDA_RUNTIME_API.
func (a *RuntimeAPI) Addr() string { return a.ln.Addr().String() }

// Close stops the server. Waiting GET next requests get 410 Gone, on which
// aws-lambda-go's loop ends; invocations not answered yet end with an
// error.
func (a *RuntimeAPI) Close() error {
	a.closeOnce.Do(func() {
		close(a.closed)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if err := a.srv.Shutdown(ctx); err != nil {
			_ = a.srv.Close()
		}
	})
	return nil
}

// Stats are the server's counters.
type Stats struct {
	Waiting     int // GET next requests waiting now
	InFlight    int // invocations handed out and not answered now
	MaxInFlight int // the most invocations ever in flight at once
	HandedOut   int // invocations handed out so far
}

// Stats returns the counters now.
func (a *RuntimeAPI) Stats() Stats {
	a.mu.Lock()
	defer a.mu.Unlock()
	return Stats{Waiting: a.waiting, InFlight: a.inFlight, MaxInFlight: a.maxFlight, HandedOut: a.handedOut}
}

// InitError returns the body and error type of the runtime's init error
// report, and false when there was none.
func (a *RuntimeAPI) InitError() ([]byte, string, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.initErr, a.initType, a.initErr != nil
}

// WaitForLoops blocks until n GET next requests wait at once (the runtime
// runs n invocation loops and is idle), ctx ends, or the server closes.
func (a *RuntimeAPI) WaitForLoops(ctx context.Context, n int) error {
	delay := time.Millisecond
	for {
		if a.Stats().Waiting >= n {
			return nil
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("sandbox: runtime API: %d of %d invocation loops waiting: %w", a.Stats().Waiting, n, context.Cause(ctx))
		case <-a.closed:
			t.Stop()
			return errors.New("sandbox: runtime API closed")
		case <-t.C:
		}
		delay = min(2*delay, 50*time.Millisecond)
	}
}

// Invoke queues one invocation with payload and waits for its answer (a
// timeout answer when the function does not answer by its deadline), the
// server's close, or ctx's end. The answer's Status is 200 for a response and an error
// alike, with FunctionError set for an error, as Lambda's Invoke API
// reports them.
func (a *RuntimeAPI) Invoke(ctx context.Context, payload []byte) (inv Invocation) {
	p := &pending{id: newRequestID(), payload: payload, trace: newTraceID(), result: make(chan answer, 1)}
	inv = Invocation{RequestID: p.id, Payload: payload, Start: time.Now()}
	defer func() { inv.End = time.Now() }()
	if body, typ, ok := a.InitError(); ok {
		inv.Status, inv.FunctionError, inv.Body, inv.ErrorType = http.StatusOK, true, body, typ
		return inv
	}
	select {
	case a.queue <- p:
	default:
		inv.Err = errors.New("sandbox: runtime API: queue full")
		return inv
	}
	select {
	case ans := <-p.result:
		inv.Status = http.StatusOK
		inv.Body, inv.FunctionError, inv.ErrorType = ans.body, ans.isError, ans.errorType
	case <-ctx.Done():
		a.forget(p.id)
		inv.Err = fmt.Errorf("sandbox: invocation %s: %w", p.id, context.Cause(ctx))
	case <-a.closed:
		inv.Err = fmt.Errorf("sandbox: invocation %s: runtime API closed", p.id)
	}
	return inv
}

// ServeHTTP implements the Runtime API.
func (a *RuntimeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path, ok := strings.CutPrefix(r.URL.Path, runtimePrefix)
	switch {
	case !ok:
		apiError(w, http.StatusNotFound, "NotFound", "unknown path "+r.URL.Path)
	case path == "invocation/next" && r.Method == http.MethodGet:
		a.next(w, r)
	case path == "init/error" && r.Method == http.MethodPost:
		a.initError(w, r)
	case strings.HasPrefix(path, "invocation/") && r.Method == http.MethodPost:
		rest := strings.TrimPrefix(path, "invocation/")
		id, kind, ok := strings.Cut(rest, "/")
		if !ok || id == "" || (kind != "response" && kind != "error") {
			apiError(w, http.StatusNotFound, "NotFound", "unknown path "+r.URL.Path)
			return
		}
		a.answer(w, r, id, kind == "error")
	default:
		apiError(w, http.StatusMethodNotAllowed, "MethodNotAllowed", r.Method+" "+r.URL.Path)
	}
}

func (a *RuntimeAPI) next(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	a.waiting++
	a.mu.Unlock()
	var p *pending
	select {
	case p = <-a.queue:
	case <-r.Context().Done():
	case <-a.closed:
	}
	a.mu.Lock()
	a.waiting--
	if p != nil {
		a.active[p.id] = p
		a.inFlight++
		a.handedOut++
		a.maxFlight = max(a.maxFlight, a.inFlight)
	}
	a.mu.Unlock()
	if p == nil {
		apiError(w, http.StatusGone, "Closed", "the runtime API is shutting down")
		return
	}
	deadline := time.Now().Add(a.cfg.Timeout)
	h := w.Header()
	h.Set(HeaderRequestID, p.id)
	h.Set(HeaderDeadlineMs, strconv.FormatInt(deadline.UnixMilli(), 10))
	h.Set(HeaderFunctionARN, a.cfg.FunctionARN)
	h.Set(HeaderTraceID, p.trace)
	h.Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(p.payload)
	time.AfterFunc(a.cfg.Timeout, func() { a.timeout(p) })
}

// timeout ends an invocation that was not answered by its deadline, with
// the answer Lambda gives.
func (a *RuntimeAPI) timeout(p *pending) {
	if !a.finish(p.id) {
		return
	}
	msg := fmt.Sprintf("Task timed out after %.2f seconds", a.cfg.Timeout.Seconds())
	body, _ := json.Marshal(map[string]string{"errorMessage": msg, "errorType": "Sandbox.Timedout"})
	p.result <- answer{body: body, errorType: "Sandbox.Timedout", isError: true}
}

// finish removes an active invocation; false when it was not active.
func (a *RuntimeAPI) finish(id string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.active[id]; !ok {
		return false
	}
	delete(a.active, id)
	a.inFlight--
	return true
}

// forget drops an invocation whose caller gave up: if it is active it is
// finished, if still queued the runtime gets it and its answer is refused.
func (a *RuntimeAPI) forget(id string) { a.finish(id) }

func (a *RuntimeAPI) answer(w http.ResponseWriter, r *http.Request, id string, isError bool) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxResponseBytes+1))
	if err != nil {
		apiError(w, http.StatusBadRequest, "InvalidRequest", "reading the body: "+err.Error())
		return
	}
	a.mu.Lock()
	p, ok := a.active[id]
	a.mu.Unlock()
	if !ok {
		// Never handed out, or already answered or timed out.
		apiError(w, http.StatusBadRequest, "InvalidRequestID", "no invocation in progress with id "+id)
		return
	}
	if len(body) > maxResponseBytes {
		apiError(w, http.StatusRequestEntityTooLarge, "RequestEntityTooLarge", "response over 6 MiB")
		return
	}
	if !a.finish(id) { // answered meanwhile, by a concurrent request
		apiError(w, http.StatusForbidden, "InvalidStateTransition", "invocation "+id+" already answered")
		return
	}
	typ := r.Header.Get(HeaderErrorType)
	if isError && typ == "" {
		typ = errorTypeOf(body)
	}
	p.result <- answer{body: body, errorType: typ, isError: isError}
	w.WriteHeader(http.StatusAccepted)
	_, _ = io.WriteString(w, `{"status":"OK"}`)
}

func (a *RuntimeAPI) initError(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, maxResponseBytes))
	if len(body) == 0 {
		body = []byte(`{"errorMessage":"init error","errorType":"Runtime.Unknown"}`)
	}
	a.mu.Lock()
	a.initErr, a.initType = body, r.Header.Get(HeaderErrorType)
	a.mu.Unlock()
	w.WriteHeader(http.StatusAccepted)
	_, _ = io.WriteString(w, `{"status":"OK"}`)
}

// errorTypeOf returns the errorType of a function error document, or "".
func errorTypeOf(body []byte) string {
	var doc struct {
		ErrorType string `json:"errorType"`
	}
	_ = json.Unmarshal(body, &doc)
	return doc.ErrorType
}

// apiError writes the Runtime API's error document.
func apiError(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"errorType": typ, "errorMessage": msg})
}

// newRequestID returns a random UUID-shaped request id.
func newRequestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// newTraceID returns an X-Ray trace header, not sampled.
func newTraceID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	h := hex.EncodeToString(b[:])
	return "Root=1-" + strconv.FormatInt(time.Now().Unix(), 16) + "-" + h + ";Sampled=0"
}
