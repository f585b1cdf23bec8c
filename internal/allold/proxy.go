package allold

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// maxBody bounds the request and response bodies the proxy reads; DynamoDB
// items are at most 400 KB and requests far below this.
const maxBody = 32 << 20

// Proxy is an http.Handler that forwards DynamoDB JSON-protocol requests to
// one upstream server and fills in the item of ALL_OLD condition failures
// (see the package documentation).
//
// Proxy is safe for concurrent use, but the item it fills in is exact only
// when writes to one item are sequential.
type Proxy struct {
	upstream *url.URL
	client   *http.Client

	filled atomic.Int64 // error bodies an item was added to

	mu   sync.Mutex          // guards keys
	keys map[string][]string // key attribute names by table, from DescribeTable
}

// New returns a Proxy in front of the server at upstream, such as
// "http://127.0.0.1:41234". client sends the forwarded requests; nil means a
// client of the proxy's own with a 30 s timeout. New returns an error when
// upstream is not an absolute http or https URL.
func New(upstream string, client *http.Client) (*Proxy, error) {
	u, err := url.Parse(upstream)
	if err != nil {
		return nil, fmt.Errorf("allold: upstream: %w", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("allold: upstream %q is not an http(s) URL", upstream)
	}
	if client == nil {
		client = &http.Client{Timeout: 30 * time.Second}
	}
	return &Proxy{upstream: u, client: client, keys: make(map[string][]string)}, nil
}

// Filled returns how many error bodies the proxy has added an item to.
func (p *Proxy) Filled() int64 { return p.filled.Load() }

// response is an upstream answer read in full.
type response struct {
	status int
	header http.Header
	body   []byte
}

// ServeHTTP forwards r and writes the (possibly completed) answer.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if err != nil {
		writeError(w, fmt.Errorf("reading the request: %w", err))
		return
	}
	resp, err := p.send(r.Context(), r.Method, r.URL.RequestURI(), r.Header, body)
	if err != nil {
		writeError(w, err)
		return
	}
	target := r.Header.Get("X-Amz-Target")
	if wantsItem(target, body, resp) {
		filledBody, err := p.fill(r.Context(), r.Header, body, resp.body)
		if err != nil {
			writeError(w, err)
			return
		}
		if filledBody != nil {
			p.filled.Add(1)
			resp.body = filledBody
			resp.header.Set("X-Amz-Crc32", strconv.FormatUint(uint64(crc32.ChecksumIEEE(filledBody)), 10))
		}
	}
	h := w.Header()
	for k, vs := range resp.header {
		if k == "Content-Length" || hopByHop[k] {
			continue
		}
		h[k] = vs
	}
	h.Set("Content-Length", strconv.Itoa(len(resp.body)))
	w.WriteHeader(resp.status)
	w.Write(resp.body)
}

// hopByHop are the headers that belong to one connection, not to the
// message, and are never forwarded.
var hopByHop = map[string]bool{
	"Connection": true, "Keep-Alive": true, "Proxy-Connection": true, "Te": true,
	"Trailer": true, "Transfer-Encoding": true, "Upgrade": true,
}

// send makes one request to the upstream with the client's headers, except
// the per-connection ones and Accept-Encoding (the proxy's own transport
// negotiates compression and decodes it), and reads the whole answer.
func (p *Proxy) send(ctx context.Context, method, uri string, header http.Header, body []byte) (*response, error) {
	u := *p.upstream
	ref, err := url.Parse(uri)
	if err != nil {
		return nil, fmt.Errorf("request URI: %w", err)
	}
	u.Path, u.RawQuery = ref.Path, ref.RawQuery
	req, err := http.NewRequestWithContext(ctx, method, u.String(), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	for k, vs := range header {
		if k == "Content-Length" || k == "Accept-Encoding" || k == "Host" || hopByHop[k] {
			continue
		}
		req.Header[k] = vs
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("upstream: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return nil, fmt.Errorf("upstream: reading the answer: %w", err)
	}
	return &response{status: resp.StatusCode, header: resp.Header, body: b}, nil
}

// writeRequest is the part of an UpdateItem, PutItem or DeleteItem request
// the proxy reads.
type writeRequest struct {
	TableName                           string
	Key                                 map[string]json.RawMessage
	Item                                map[string]json.RawMessage // PutItem
	ReturnValuesOnConditionCheckFailure string
}

// errorBody is the part of a JSON-protocol error the proxy reads.
type errorBody struct {
	Type string          `json:"__type"`
	Item json.RawMessage `json:"Item"`
}

// operation returns the operation named by an X-Amz-Target header such as
// "DynamoDB_20120810.UpdateItem", and the header's service prefix.
func operation(target string) (prefix, op string) {
	prefix, op, ok := strings.Cut(target, ".")
	if !ok {
		return "", ""
	}
	return prefix, op
}

// wantsItem reports whether resp is a ConditionalCheckFailedException
// without an item for a conditional write that asked for ALL_OLD.
func wantsItem(target string, reqBody []byte, resp *response) bool {
	switch _, op := operation(target); op {
	case "UpdateItem", "PutItem", "DeleteItem":
	default:
		return false
	}
	if resp.status != http.StatusBadRequest {
		return false
	}
	var eb errorBody
	if json.Unmarshal(resp.body, &eb) != nil || !isConditionFailure(eb.Type) || len(eb.Item) > 0 {
		return false
	}
	var wr writeRequest
	return json.Unmarshal(reqBody, &wr) == nil && wr.ReturnValuesOnConditionCheckFailure == "ALL_OLD"
}

// isConditionFailure reports whether an error type such as
// "com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException" names a
// failed condition.
func isConditionFailure(typ string) bool {
	if i := strings.LastIndexByte(typ, '#'); i >= 0 {
		typ = typ[i+1:]
	}
	return typ == "ConditionalCheckFailedException"
}

// fill reads the item the failed write addressed and returns errBody with it
// added, or nil when there is no such item.
func (p *Proxy) fill(ctx context.Context, header http.Header, reqBody, errBody []byte) ([]byte, error) {
	var wr writeRequest
	if err := json.Unmarshal(reqBody, &wr); err != nil {
		return nil, fmt.Errorf("decoding the request: %w", err)
	}
	prefix, op := operation(header.Get("X-Amz-Target"))
	key := wr.Key
	if op == "PutItem" {
		names, err := p.keyNames(ctx, header, prefix, wr.TableName)
		if err != nil {
			return nil, err
		}
		key = make(map[string]json.RawMessage, len(names))
		for _, n := range names {
			key[n] = wr.Item[n]
		}
	}
	item, err := p.getItem(ctx, header, prefix, wr.TableName, key)
	if err != nil || item == nil {
		return nil, err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(errBody, &fields); err != nil {
		return nil, fmt.Errorf("decoding the error body: %w", err)
	}
	fields["Item"] = item
	return json.Marshal(fields)
}

// call sends one request of the proxy's own to the upstream, with the
// client's headers (so the upstream sees the same credentials) and target
// prefix.op, and decodes a 200 answer into out.
func (p *Proxy) call(ctx context.Context, header http.Header, prefix, op string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	h := header.Clone()
	h.Set("X-Amz-Target", prefix+"."+op)
	resp, err := p.send(ctx, http.MethodPost, "/", h, body)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	if resp.status != http.StatusOK {
		var eb errorBody
		json.Unmarshal(resp.body, &eb)
		return fmt.Errorf("%s: upstream status %d %s", op, resp.status, eb.Type)
	}
	if err := json.Unmarshal(resp.body, out); err != nil {
		return fmt.Errorf("%s: decoding the answer: %w", op, err)
	}
	return nil
}

// getItem reads one item with a consistent read; nil means none.
func (p *Proxy) getItem(ctx context.Context, header http.Header, prefix, table string, key map[string]json.RawMessage) (json.RawMessage, error) {
	var out struct{ Item json.RawMessage }
	in := map[string]any{"TableName": table, "Key": key, "ConsistentRead": true}
	if err := p.call(ctx, header, prefix, "GetItem", in, &out); err != nil {
		return nil, err
	}
	if len(out.Item) == 0 || string(out.Item) == "null" || string(out.Item) == "{}" {
		return nil, nil
	}
	return out.Item, nil
}

// keyNames returns the key attribute names of table, read once with
// DescribeTable.
func (p *Proxy) keyNames(ctx context.Context, header http.Header, prefix, table string) ([]string, error) {
	p.mu.Lock()
	names, ok := p.keys[table]
	p.mu.Unlock()
	if ok {
		return names, nil
	}
	var out struct {
		Table struct {
			KeySchema []struct{ AttributeName string }
		}
	}
	if err := p.call(ctx, header, prefix, "DescribeTable", map[string]string{"TableName": table}, &out); err != nil {
		return nil, err
	}
	for _, k := range out.Table.KeySchema {
		names = append(names, k.AttributeName)
	}
	if len(names) == 0 {
		return nil, errors.New("DescribeTable: no key schema")
	}
	p.mu.Lock()
	p.keys[table] = names
	p.mu.Unlock()
	return names, nil
}

// writeError answers with a server error in the JSON protocol's shape, so
// that a client reports it instead of a failed condition without an item.
func writeError(w http.ResponseWriter, err error) {
	body, _ := json.Marshal(map[string]string{
		"__type":  "com.amazonaws.dynamodb.v20120810#InternalServerError",
		"message": "allold proxy: " + err.Error(),
	})
	h := w.Header()
	h.Set("Content-Type", "application/x-amz-json-1.0")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("X-Amz-Crc32", strconv.FormatUint(uint64(crc32.ChecksumIEEE(body)), 10))
	w.WriteHeader(http.StatusInternalServerError)
	w.Write(body)
}
