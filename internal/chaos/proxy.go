package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// proxyMode is how much a proxy injects.
type proxyMode int

const (
	modeOff   proxyMode = iota // forward only
	modeLight                  // small delays only
	modeFull                   // every request fault
	modeStorm                  // every request fault, the drops StormFaults.DropScale times as likely
)

// proxy is the fault proxy of one worker slot: an HTTP server on a loopback
// port that forwards the worker's DynamoDB requests to Dynoxide, recording
// each forwarded request and its response, and injects faults drawn from
// its own seeded PRNG. It is safe for concurrent use.
type proxy struct {
	slot     int
	upstream string
	client   *http.Client
	rec      *recorder
	faults   Faults
	hangFor  time.Duration // how long a hung request is held: past the client's attempt timeout
	// dropScale multiplies the drop probabilities in modeStorm.
	dropScale float64
	// drops cycles the modes of drops through all proxies, so that any
	// three drops before (or after) forwarding show every mode.
	drops *dropCycle

	mu        sync.Mutex // guards the fields below
	rng       *rand.Rand
	mode      proxyMode
	partUntil int64 // Mono; partitioned while Mono() < partUntil
	partResp  bool  // partition drops responses only
	brownout  brownout
	// denyWrites: the worker's role may not write the table (a storm's
	// misconfiguration stretch); every write is answered with
	// AccessDeniedException, as DynamoDB answers it, and not forwarded.
	denyWrites bool

	ln  net.Listener
	srv *http.Server
}

func newProxy(slot int, seed int64, upstream string, rec *recorder, f Faults, hangFor time.Duration, dropScale float64, drops *dropCycle) (*proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("chaos: proxy listen: %w", err)
	}
	p := &proxy{
		slot:     slot,
		upstream: upstream,
		client: &http.Client{Transport: &http.Transport{
			MaxIdleConnsPerHost: 16,
			IdleConnTimeout:     30 * time.Second,
		}},
		rec:       rec,
		faults:    f,
		hangFor:   hangFor,
		dropScale: dropScale,
		drops:     drops,
		rng:       rand.New(rand.NewPCG(uint64(seed), uint64(slot)+0x9e3779b97f4a7c15)),
		ln:        ln,
	}
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 5 * time.Second}
	go p.srv.Serve(ln)
	return p, nil
}

// URL returns the endpoint the worker's SDK client uses.
func (p *proxy) URL() string { return "http://" + p.ln.Addr().String() }

func (p *proxy) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = p.srv.Shutdown(ctx)
	_ = p.srv.Close()
}

func (p *proxy) setMode(m proxyMode) {
	p.mu.Lock()
	p.mode = m
	p.mu.Unlock()
}

// partition cuts the worker off until Mono reaches until, in both
// directions or for responses only.
func (p *proxy) partition(until int64, responsesOnly bool) {
	p.mu.Lock()
	p.partUntil, p.partResp = until, responsesOnly
	p.mu.Unlock()
}

// brownout is a stretch during which every request is delayed by
// U(lo, hi), before or after forwarding.
type brownout struct {
	until  int64 // Mono
	lo, hi time.Duration
}

// brownOut delays every request until Mono reaches b.until.
func (p *proxy) brownOut(b brownout) {
	p.mu.Lock()
	p.brownout = b
	p.mu.Unlock()
}

// denyWritesFor answers every write with AccessDeniedException while on.
func (p *proxy) denyWritesFor(on bool) {
	p.mu.Lock()
	p.denyWrites = on
	p.mu.Unlock()
}

// dropCycle hands out the modes of drops, shared by all proxies.
type dropCycle struct{ before, after atomic.Uint64 }

// decision is what the proxy does with one request.
type decision struct {
	delayBefore time.Duration
	delayAfter  time.Duration
	small       bool
	dropBefore  int // 0 none; 1 500; 2 reset; 3 hang
	dropAfter   int // 0 none; 1 reset; 2 stall; 3 500
	duplicate   bool
	throttle    int // 0 none; 1 with crc; 2 without
	partDrop    bool
	partResp    bool
	brownBefore time.Duration // brownout delays, on top of the others
	brownAfter  time.Duration
	denied      bool // a write the role may not make: AccessDeniedException
}

func (p *proxy) uniform(lo, hi time.Duration) time.Duration {
	return lo + time.Duration(p.rng.Int64N(int64(hi-lo)+1))
}

func (p *proxy) decide(write bool) decision {
	p.mu.Lock()
	defer p.mu.Unlock()
	var d decision
	now := Mono()
	if now < p.partUntil {
		if p.partResp {
			d.partResp = true
		} else {
			d.partDrop = true
			return d
		}
	}
	if write && p.denyWrites {
		d.denied = true
		return d
	}
	if b := p.brownout; now < b.until {
		if p.rng.IntN(2) == 0 {
			d.brownBefore = p.uniform(b.lo, b.hi)
		} else {
			d.brownAfter = p.uniform(b.lo, b.hi)
		}
	}
	f := p.faults
	switch p.mode {
	case modeOff:
		return d
	case modeLight:
		if p.rng.Float64() < f.SmallDelayP {
			d.small, d.delayBefore = true, p.uniform(0, f.SmallDelayMax)
		}
		return d
	}
	if p.rng.Float64() < f.ThrottleP {
		d.throttle = 1 + p.rng.IntN(2)
		return d
	}
	scale := 1.0
	if p.mode == modeStorm {
		scale = p.dropScale
	}
	if p.rng.Float64() < f.DropBeforeP*scale {
		d.dropBefore = 1 + int(p.drops.before.Add(1)%3)
		return d
	}
	switch u := p.rng.Float64(); {
	case u < f.BigDelayP/2:
		d.delayBefore = p.uniform(f.BigDelayMin, f.BigDelayMax)
	case u < f.BigDelayP:
		d.delayAfter = p.uniform(f.BigDelayMin, f.BigDelayMax)
	case u < f.BigDelayP+f.SmallDelayP:
		d.small, d.delayBefore = true, p.uniform(0, f.SmallDelayMax)
	}
	if p.rng.Float64() < f.DuplicateP {
		d.duplicate = true
	}
	if write && p.rng.Float64() < f.DropAfterP*scale {
		d.dropAfter = 1 + int(p.drops.after.Add(1)%3)
	}
	return d
}

var dropBeforeModes = [...]string{"", "500", "reset", "hang"}
var dropAfterModes = [...]string{"", "reset", "stall", "500"}

func (p *proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	arrive := Mono()
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	target := r.Header.Get("X-Amz-Target")
	if i := strings.LastIndexByte(target, '.'); i >= 0 {
		target = target[i+1:]
	}
	write := target == "UpdateItem" || target == "PutItem" || target == "DeleteItem"
	id := p.rec.id()
	d := p.decide(write)
	fault := func(kind, detail string) {
		p.rec.fault(Fault{T: Mono(), Worker: p.slot, Kind: kind, Detail: detail + " " + target, ReqID: id})
	}

	switch {
	case d.partDrop:
		fault(FaultPartitionDrop, "")
		p.hang(w, r)
		return
	case d.denied:
		fault(FaultAccessDenied, p.parseRequest(target, body, "").key) // Detail: the key and the operation
		accessDenied(w, target)
		return
	case d.throttle > 0:
		kind := FaultThrottleCRC
		if d.throttle == 2 {
			kind = FaultThrottleNoCRC
		}
		fault(kind, "")
		throttle(w, d.throttle == 1)
		return
	case d.dropBefore > 0:
		fault(FaultDropBefore, dropBeforeModes[d.dropBefore])
		switch d.dropBefore {
		case 1:
			http.Error(w, `{"__type":"com.amazonaws.dynamodb.v20120810#InternalServerError","message":"chaos"}`, http.StatusInternalServerError)
		case 2:
			reset(w)
		default:
			p.hang(w, r)
		}
		return
	}
	if d.brownBefore > 0 {
		fault(FaultBrownoutDelay, d.brownBefore.String()+" before")
		time.Sleep(d.brownBefore) // the fault itself: the server is slow to take the request
	}
	if d.delayBefore > 0 {
		if d.small {
			fault(FaultSmallDelay, d.delayBefore.String())
		} else {
			fault(FaultDelayBefore, d.delayBefore.String())
		}
		time.Sleep(d.delayBefore) // the fault itself: the request arrives late, even if the client gave up
	}

	in := p.parseRequest(target, body, r.Header.Get(IntentHeader))
	in.arrive = arrive
	resp, op := p.forward(r, body, in, id, false)
	if d.duplicate {
		fault(FaultDuplicate, "")
		_, dup := p.forward(r, body, in, id, true)
		dup.Lost = true // nobody reads the copy's answer
		p.rec.op(dup)
	}
	// The operation is recorded once the worker has its answer, or none.
	op.Lost = true
	defer func() { p.rec.op(op) }()
	switch {
	case resp == nil:
		reset(w)
		return
	case d.dropAfter > 0 || d.partResp:
		if d.partResp {
			fault(FaultPartitionResp, "")
			reset(w)
			return
		}
		fault(FaultDropAfter, dropAfterModes[d.dropAfter])
		switch d.dropAfter {
		case 1:
			reset(w)
		case 2:
			p.hang(w, r)
		default:
			http.Error(w, `{"__type":"com.amazonaws.dynamodb.v20120810#InternalServerError","message":"chaos"}`, http.StatusInternalServerError)
		}
		return
	}
	if d.delayAfter > 0 {
		fault(FaultDelayAfter, d.delayAfter.String())
		time.Sleep(d.delayAfter) // the fault itself: applied on time, learned late
	}
	if d.brownAfter > 0 {
		fault(FaultBrownoutDelay, d.brownAfter.String()+" after")
		time.Sleep(d.brownAfter) // the fault itself: applied on time, answered slowly
	}
	for k, vs := range resp.header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	op.Lost, op.Answer, op.Gone = false, Mono(), r.Context().Err() != nil
	w.WriteHeader(resp.status)
	w.Write(resp.body)
}

// accessDenied answers a write as DynamoDB answers one that the caller's
// role may not make: HTTP 400, AccessDeniedException, with x-amz-crc32.
func accessDenied(w http.ResponseWriter, target string) {
	body := []byte(`{"__type":"com.amazonaws.dynamodb.v20120810#AccessDeniedException",` +
		`"message":"User: arn:aws:sts::123456789012:assumed-role/chaos-worker/chaos is not authorized to perform: dynamodb:` + target +
		` on resource: arn:aws:dynamodb:us-east-1:123456789012:table/` + table + ` because no identity-based policy allows the dynamodb:` + target + ` action"}`)
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.Header().Set("x-amzn-RequestId", "chaos-access-denied")
	w.Header().Set("x-amz-crc32", strconv.FormatUint(uint64(crc32.ChecksumIEEE(body)), 10))
	w.WriteHeader(http.StatusBadRequest)
	w.Write(body)
}

// hang holds the request until the client gives up or hangFor passes, then
// resets the connection.
func (p *proxy) hang(w http.ResponseWriter, r *http.Request) {
	t := time.NewTimer(p.hangFor)
	defer t.Stop()
	select {
	case <-r.Context().Done():
	case <-t.C:
	}
	reset(w)
}

// reset closes the client's connection without a response.
func reset(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic(http.ErrAbortHandler)
	}
	c, _, err := hj.Hijack()
	if err != nil {
		return
	}
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	c.Close()
}

// throttle answers with a synthetic ProvisionedThroughputExceededException,
// with a correct x-amz-crc32 header or none.
func throttle(w http.ResponseWriter, crc bool) {
	body := []byte(`{"__type":"com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException",` +
		`"message":"The level of configured provisioned throughput for the table was exceeded."}`)
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.Header().Set("x-amzn-RequestId", "chaos-throttle")
	if crc {
		w.Header().Set("x-amz-crc32", strconv.FormatUint(uint64(crc32.ChecksumIEEE(body)), 10))
	}
	w.WriteHeader(http.StatusBadRequest)
	w.Write(body)
}

type response struct {
	status int
	header http.Header
	body   []byte
}

// reqInfo is what the proxy reads from a request.
type reqInfo struct {
	target  string
	key     string
	intent  *Intent
	putRev  string
	expr    string
	condRev string
	arrive  int64 // Mono when the request reached the proxy
}

func (p *proxy) parseRequest(target string, body []byte, intentHdr string) reqInfo {
	in := reqInfo{target: target}
	var req struct {
		Key    map[string]attr `json:"Key"`
		Item   map[string]attr `json:"Item"`
		Expr   string          `json:"UpdateExpression"`
		Values map[string]attr `json:"ExpressionAttributeValues"`
	}
	_ = json.Unmarshal(body, &req)
	in.key = req.Key["lockKey"].str()
	if in.key == "" {
		in.key = req.Item["lockKey"].str()
	}
	if target == "PutItem" {
		in.putRev = req.Item["revision"].str()
	}
	if intentHdr == "" && target == "UpdateItem" {
		in.expr, in.condRev = req.Expr, req.Values[":rev"].str()
	}
	if intentHdr != "" {
		var it Intent
		if json.Unmarshal([]byte(intentHdr), &it) == nil {
			if target == "GetItem" {
				it = Intent{Op: "get", Key: it.Key}
			}
			if it.Op == "renew" && !strings.Contains(req.Expr, "#lu") {
				it.Op = "renew-beat"
			}
			in.intent = &it
		}
	}
	return in
}

// forward sends the request to Dynoxide and returns the operation, for
// the caller to record. The request goes out even when the client has
// given up, as a delayed packet would. Its response is nil when Dynoxide
// did not answer.
func (p *proxy) forward(r *http.Request, body []byte, in reqInfo, id int64, dup bool) (*response, StoreOp) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	op := StoreOp{ID: id, Worker: p.slot, Target: in.target, Key: in.key, Intent: in.intent, PutRev: in.putRev,
		Expr: in.expr, CondRev: in.condRev, Dup: dup, Arrive: in.arrive}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.upstream+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		op.ErrType = "transport: " + err.Error()
		return nil, op
	}
	for k, vs := range r.Header {
		if k == IntentHeader {
			continue
		}
		req.Header[k] = vs
	}
	op.Call = Mono()
	resp, err := p.client.Do(req)
	var out *response
	if err == nil {
		b, rerr := io.ReadAll(resp.Body)
		resp.Body.Close()
		if rerr == nil {
			out = &response{status: resp.StatusCode, header: resp.Header, body: b}
		}
	}
	op.Return = Mono()
	if out != nil {
		op.Status = out.status
		var res struct {
			Type       string          `json:"__type"`
			Attributes map[string]attr `json:"Attributes"`
			Item       map[string]attr `json:"Item"`
		}
		_ = json.Unmarshal(out.body, &res)
		if i := strings.LastIndexByte(res.Type, '#'); i >= 0 {
			op.ErrType = res.Type[i+1:]
		} else {
			op.ErrType = res.Type
		}
		if v := decodeView(res.Attributes); v != nil {
			op.Item = v
		} else {
			op.Item = decodeView(res.Item)
		}
	} else if err != nil && !errors.Is(err, context.Canceled) {
		op.ErrType = "transport: " + err.Error()
	}
	return out, op
}
