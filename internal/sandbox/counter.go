package sandbox

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
)

// CountingProxy is a reverse proxy in front of a DynamoDB-API server that
// counts the requests passing through it, by operation (the X-Amz-Target
// header: GetItem, UpdateItem, PutItem...). It is safe for concurrent use.
type CountingProxy struct {
	srv *httptest.Server

	mu      sync.Mutex // guards byOp and byTable
	byOp    map[string]int
	byTable map[string]map[string]int // table -> operation -> count
}

// StartCountingProxy starts a proxy on a loopback port forwarding to target,
// such as a dynalite endpoint. Close it when done.
func StartCountingProxy(target string) (*CountingProxy, error) {
	u, err := url.Parse(target)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("sandbox: counting proxy: bad target %q", target)
	}
	p := &CountingProxy{byOp: make(map[string]int), byTable: make(map[string]map[string]int)}
	rp := httputil.NewSingleHostReverseProxy(u)
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		op := r.Header.Get("X-Amz-Target")
		if i := strings.LastIndexByte(op, '.'); i >= 0 {
			op = op[i+1:]
		}
		if op == "" {
			op = "(none)"
		}
		table := ""
		if r.Body != nil {
			body, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, "counting proxy: "+err.Error(), http.StatusBadGateway)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			table = tableName(body)
		}
		p.mu.Lock()
		p.byOp[op]++
		if table != "" {
			if p.byTable[table] == nil {
				p.byTable[table] = make(map[string]int)
			}
			p.byTable[table][op]++
		}
		p.mu.Unlock()
		rp.ServeHTTP(w, r)
	}))
	return p, nil
}

// URL returns the proxy's endpoint, to be used as the DynamoDB endpoint.
func (p *CountingProxy) URL() string { return p.srv.URL }

// Close stops the proxy.
func (p *CountingProxy) Close() { p.srv.Close() }

// Counts returns the requests counted so far by operation.
func (p *CountingProxy) Counts() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	m := make(map[string]int, len(p.byOp))
	for k, v := range p.byOp {
		m[k] = v
	}
	return m
}

// CountsFor returns the requests counted so far on table, by operation:
// those whose body names it as its TableName.
func (p *CountingProxy) CountsFor(table string) map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	m := make(map[string]int, len(p.byTable[table]))
	for k, v := range p.byTable[table] {
		m[k] = v
	}
	return m
}

// tableName reads the TableName of a DynamoDB JSON request, or "".
func tableName(body []byte) string {
	var req struct{ TableName string }
	_ = json.Unmarshal(body, &req)
	return req.TableName
}

// Total returns the number of requests counted so far.
func (p *CountingProxy) Total() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, v := range p.byOp {
		n += v
	}
	return n
}

// Reset sets every count back to zero.
func (p *CountingProxy) Reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	clear(p.byOp)
	clear(p.byTable)
}
