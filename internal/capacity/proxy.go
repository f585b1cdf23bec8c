package capacity

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Proxy is the capacity model: an http.Handler that charges, throttles and
// forwards DynamoDB requests (see the package documentation). It is safe
// for concurrent use.
type Proxy struct {
	cfg    Config
	client *http.Client

	mu      sync.Mutex // guards the fields below; never held across I/O
	items   map[string]*item
	schemas map[string][]string // table → names of its key attributes
	write   float64             // current refill rates, see SetRates
	read    float64
}

// item is the state of one item: its buckets, its last known size and its
// counts.
type item struct {
	write, read *bucket
	size        int
	sized       bool // size is known
	stats       ItemStats
}

// New returns a Proxy forwarding to cfg.Upstream. It returns an error for an
// invalid cfg.
func New(cfg Config) (*Proxy, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	rt := cfg.Transport
	if rt == nil {
		rt = &http.Transport{Proxy: nil, MaxIdleConns: 256, MaxIdleConnsPerHost: 256, IdleConnTimeout: 30 * time.Second}
	}
	return &Proxy{
		cfg:     cfg,
		client:  &http.Client{Transport: rt},
		items:   map[string]*item{},
		schemas: map[string][]string{},
		write:   cfg.WriteUnits,
		read:    cfg.ReadUnits,
	}, nil
}

// SetRates changes the refill rates of every item's buckets, present and
// future, keeping their fill levels (capped by the new size). Rates must be
// positive.
func (p *Proxy) SetRates(write, read float64) error {
	if write <= 0 || read <= 0 {
		return fmt.Errorf("capacity: rates must be positive, got write %v, read %v", write, read)
	}
	now := p.cfg.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.write, p.read = write, read
	for _, it := range p.items {
		it.write.setRate(write, p.cfg.Burst, now)
		it.read.setRate(read, p.cfg.Burst, now)
	}
	return nil
}

// Stats returns the counts of every item seen, by [ItemKey].
func (p *Proxy) Stats() map[string]ItemStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	m := make(map[string]ItemStats, len(p.items))
	for k, it := range p.items {
		m[k] = it.stats.clone()
	}
	return m
}

// Item returns the counts of the item named key (see [ItemKey]); zero when
// it was never requested.
func (p *Proxy) Item(key string) ItemStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	if it, ok := p.items[key]; ok {
		return it.stats.clone()
	}
	return ItemStats{}
}

// request is what the proxy reads of a request body.
type request struct {
	TableName      string               `json:"TableName"`
	Key            map[string]attrValue `json:"Key"`
	Item           map[string]attrValue `json:"Item"`
	ConsistentRead bool                 `json:"ConsistentRead"`
	ReturnValues   string               `json:"ReturnValues"`
}

// answer is what the proxy reads of a response body.
type answer struct {
	Type       string               `json:"__type"`
	Attributes map[string]attrValue `json:"Attributes"`
	Item       map[string]attrValue `json:"Item"`
}

func (a answer) errorType() string {
	if i := strings.LastIndexByte(a.Type, '#'); i >= 0 {
		return a.Type[i+1:]
	}
	return a.Type
}

// ServeHTTP implements http.Handler.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, "capacity: reading the request: "+err.Error(), http.StatusBadRequest)
		return
	}
	op := r.Header.Get("X-Amz-Target")
	if i := strings.LastIndexByte(op, '.'); i >= 0 {
		op = op[i+1:]
	}
	var req request
	if op != "GetItem" && !isWrite(op) || json.Unmarshal(body, &req) != nil {
		p.relay(w, r, body)
		return
	}
	key, ok := p.itemKey(r, op, req)
	if !ok {
		p.relay(w, r, body)
		return
	}
	p.ensureSized(r, key, req)

	now := p.cfg.Now()
	p.mu.Lock()
	it := p.itemLocked(key, now)
	b, reason, estimate := it.read, ReasonReadKeyRange, readUnits(it.size, req.ConsistentRead)
	if isWrite(op) {
		b, reason, estimate = it.write, ReasonWriteKeyRange, writeUnits(it.size)
	}
	admitted := b.take(estimate, now)
	it.stats.add(op, func(o *OpStats) {
		o.Requests++
		if !admitted {
			o.Throttled++
		}
	})
	p.mu.Unlock()
	if !admitted {
		writeJSON(w, http.StatusBadRequest, throttleBody(p.cfg.Exception, reason, p.cfg.tableARN(req.TableName)))
		return
	}

	resp, err := p.forward(r.Context(), r.Header, body)
	if err != nil {
		p.settle(key, op, -estimate)
		http.Error(w, "capacity: upstream: "+err.Error(), http.StatusBadGateway)
		return
	}
	cost := p.charge(r, key, op, req, resp)
	p.settle(key, op, cost-estimate)
	p.relayResponse(w, resp)
}

// itemLocked returns the state of key, creating it with full buckets.
func (p *Proxy) itemLocked(key string, now time.Time) *item {
	it, ok := p.items[key]
	if !ok {
		it = &item{write: newBucket(p.write, p.cfg.Burst, now), read: newBucket(p.read, p.cfg.Burst, now)}
		p.items[key] = it
	}
	return it
}

// settle books the difference between a request's cost and its estimate.
func (p *Proxy) settle(key, op string, delta float64) {
	now := p.cfg.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	it := p.items[key]
	b := it.read
	if isWrite(op) {
		b = it.write
	}
	b.settle(delta, now)
}

// charge returns the real cost of an answered request (0 for one DynamoDB
// would not serve), and records it and the item's new size.
func (p *Proxy) charge(r *http.Request, key, op string, req request, resp *response) float64 {
	var a answer
	_ = json.Unmarshal(resp.body, &a)
	p.mu.Lock()
	old := p.items[key].size
	p.mu.Unlock()

	var cost float64
	size, sized := old, true
	failed := false
	switch {
	case resp.status == http.StatusOK && op == "GetItem":
		size = itemSize(a.Item)
		cost = readUnits(size, req.ConsistentRead)
	case resp.status == http.StatusOK && op == "PutItem":
		size = itemSize(req.Item)
		cost = writeUnits(old, size)
	case resp.status == http.StatusOK && op == "DeleteItem":
		if req.ReturnValues == "ALL_OLD" && a.Attributes != nil {
			old = itemSize(a.Attributes)
		}
		size, cost = 0, writeUnits(old)
	case resp.status == http.StatusOK: // UpdateItem
		if req.ReturnValues == "ALL_NEW" && a.Attributes != nil {
			size = itemSize(a.Attributes)
		} else if n, ok := p.readSize(r, req); ok {
			size = n
		} else {
			sized = false
		}
		cost = writeUnits(old, size)
	case resp.status == http.StatusBadRequest && a.errorType() == "ConditionalCheckFailedException":
		failed = true
		if a.Item != nil {
			size = itemSize(a.Item)
		}
		cost = writeUnits(size)
	default: // not served: validation errors, server errors
		return 0
	}
	p.mu.Lock()
	it := p.items[key]
	it.size, it.sized = size, sized
	it.stats.add(op, func(o *OpStats) {
		o.Units += cost
		if failed {
			o.ConditionFailed++
		}
	})
	if isWrite(op) {
		it.stats.WriteUnits += cost
	} else {
		it.stats.ReadUnits += cost
	}
	p.mu.Unlock()
	return cost
}

// itemKey returns the canonical key of the item req addresses. PutItem
// carries the whole item: its key attributes come from the table's schema.
func (p *Proxy) itemKey(r *http.Request, op string, req request) (string, bool) {
	if req.TableName == "" {
		return "", false
	}
	if op != "PutItem" {
		if len(req.Key) == 0 {
			return "", false
		}
		return canonicalKey(req.TableName, req.Key), true
	}
	names, ok := p.keySchema(r, req.TableName)
	if !ok {
		return "", false
	}
	key := map[string]attrValue{}
	for _, n := range names {
		v, ok := req.Item[n]
		if !ok {
			return "", false
		}
		key[n] = v
	}
	return canonicalKey(req.TableName, key), true
}

// keySchema returns the key attribute names of table, asking the server
// once.
func (p *Proxy) keySchema(r *http.Request, table string) ([]string, bool) {
	p.mu.Lock()
	names, ok := p.schemas[table]
	p.mu.Unlock()
	if ok {
		return names, true
	}
	body, _ := json.Marshal(map[string]string{"TableName": table})
	resp, err := p.forward(r.Context(), internalHeader(r, "DescribeTable"), body)
	if err != nil || resp.status != http.StatusOK {
		return nil, false
	}
	var out struct {
		Table struct {
			KeySchema []struct{ AttributeName string } `json:"KeySchema"`
		} `json:"Table"`
	}
	if json.Unmarshal(resp.body, &out) != nil || len(out.Table.KeySchema) == 0 {
		return nil, false
	}
	for _, k := range out.Table.KeySchema {
		names = append(names, k.AttributeName)
	}
	p.mu.Lock()
	p.schemas[table] = names
	p.mu.Unlock()
	return names, true
}

// ensureSized learns the size of the item req addresses, once, before its
// first charge.
func (p *Proxy) ensureSized(r *http.Request, key string, req request) {
	p.mu.Lock()
	it := p.itemLocked(key, p.cfg.Now())
	sized := it.sized
	p.mu.Unlock()
	if sized {
		return
	}
	if req.Key == nil { // PutItem: the item itself
		return
	}
	n, ok := p.readSize(r, req)
	if !ok {
		return
	}
	p.mu.Lock()
	if !it.sized {
		it.size, it.sized = n, true
	}
	p.mu.Unlock()
}

// readSize reads the item of req from the server, uncharged, and returns
// its size (0 when absent).
func (p *Proxy) readSize(r *http.Request, req request) (int, bool) {
	if req.Key == nil {
		return 0, false
	}
	body, _ := json.Marshal(struct {
		TableName      string
		Key            map[string]attrValue
		ConsistentRead bool
	}{req.TableName, req.Key, true})
	resp, err := p.forward(r.Context(), internalHeader(r, "GetItem"), body)
	if err != nil || resp.status != http.StatusOK {
		return 0, false
	}
	var a answer
	if json.Unmarshal(resp.body, &a) != nil {
		return 0, false
	}
	return itemSize(a.Item), true
}

// internalHeader returns the headers of a request the proxy makes itself,
// with the client's authorization (local servers check its form only).
func internalHeader(r *http.Request, op string) http.Header {
	h := http.Header{}
	h.Set("Content-Type", jsonContentType)
	h.Set("X-Amz-Target", "DynamoDB_20120810."+op)
	if a := r.Header.Get("Authorization"); a != "" {
		h.Set("Authorization", a)
	}
	if d := r.Header.Get("X-Amz-Date"); d != "" {
		h.Set("X-Amz-Date", d)
	}
	return h
}

type response struct {
	status int
	header http.Header
	body   []byte
}

// forward sends one request to the server and reads its answer. It ends
// when ctx does (the client gave up) or after 30 seconds.
func (p *Proxy) forward(ctx context.Context, h http.Header, body []byte) (*response, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(p.cfg.Upstream, "/")+"/", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	for k, vs := range h {
		switch http.CanonicalHeaderKey(k) {
		case "Host", "Content-Length", "Connection":
			continue
		}
		req.Header[k] = vs
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	return &response{status: resp.StatusCode, header: resp.Header, body: b}, nil
}

// relay forwards a request the model does not charge.
func (p *Proxy) relay(w http.ResponseWriter, r *http.Request, body []byte) {
	resp, err := p.forward(r.Context(), r.Header, body)
	if err != nil {
		http.Error(w, "capacity: upstream: "+err.Error(), http.StatusBadGateway)
		return
	}
	p.relayResponse(w, resp)
}

// relayResponse writes the server's answer, with a correct x-amz-crc32
// whether or not the server sent one.
func (p *Proxy) relayResponse(w http.ResponseWriter, resp *response) {
	for k, vs := range resp.header {
		switch http.CanonicalHeaderKey(k) {
		case "Content-Length", "Connection", "Transfer-Encoding", "X-Amz-Crc32":
			continue
		}
		w.Header()[k] = vs
	}
	w.Header().Set("x-amz-crc32", fmt.Sprint(crc32.ChecksumIEEE(resp.body)))
	w.Header().Set("Content-Length", fmt.Sprint(len(resp.body)))
	w.WriteHeader(resp.status)
	_, _ = w.Write(resp.body)
}
