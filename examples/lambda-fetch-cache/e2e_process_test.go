package main

import (
	"context"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/herdlock/herdlock/examples/lambda-fetch-cache/fetchcache"
	"github.com/herdlock/herdlock/examples/lambda-fetch-cache/internal/localrun"
	"github.com/herdlock/herdlock/internal/dynoxide/dynoxidetest"
	"github.com/herdlock/herdlock/internal/sandbox"
)

// followingLog is the debug line of an invocation that waits for another
// invocation's lock attempt in the same process.
const followingLog = "lockmw: waiting for the lock attempt of another invocation in this process"

// processConcurrency is AWS_LAMBDA_MAX_CONCURRENCY of the one process.
const processConcurrency = 16

// TestManyInvocationsPerProcess runs the real bootstrap as ONE process with
// AWS_LAMBDA_MAX_CONCURRENCY=16, as an execution environment of Lambda
// Managed Instances runs it, against the project's Runtime API server,
// Dynoxide behind the counting proxy, and the upstream behind a gate. 16
// concurrent invocations for one key share one lock attempt: one upstream
// call, the new process's first read, one acquire and one release on the
// lock table, and no poll; every
// invocation writes its own EMF document.
func TestManyInvocationsPerProcess(t *testing.T) {
	boot, err := sandbox.BuildBootstrap(t.Context(), localrun.Package, t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	db := dynoxidetest.Start(t)
	r, err := localrun.Start(t.Context(), localrun.Options{DynamoEndpoint: db.Endpoint(), Bootstrap: boot, LogLevel: "DEBUG"})
	if err != nil {
		t.Fatalf("localrun.Start() = %v", err)
	}
	t.Cleanup(r.Close)
	gate := startGate(t, r.Upstream.URL())
	p, err := r.StartProcess(t.Context(), processConcurrency, 30*time.Second, fetchcache.EnvUpstreamURL+"="+gate.srv.URL)
	if err != nil {
		t.Fatal(err)
	}

	// The upstream answers once every invocation but the holder waits for
	// the holder in the process (each logs it at debug level), so that
	// none comes too late to share the attempt. If that never happens, the
	// gate opens after a while and the counts below fail.
	go func() {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		for ctx.Err() == nil && countLines(p.StderrLines(), followingLog) < processConcurrency-1 {
			time.Sleep(5 * time.Millisecond)
		}
		gate.open()
	}()
	r.Dynamo.Reset()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	invs := p.Burst(ctx, localrun.Payloads(localrun.Repeat("EUR-USD", processConcurrency)...))
	resps := decodeAll(t, invs)

	if s := p.API.Stats(); s.MaxInFlight != processConcurrency {
		t.Errorf("invocations in flight at once = %d, want %d", s.MaxInFlight, processConcurrency)
	}
	if got := r.Upstream.Requests(); got != 1 {
		t.Errorf("upstream requests = %d, want 1", got)
	}
	checkOneFetch(t, fetchcache.AnswerCache, resps, 1)
	var coalesced int
	for _, resp := range resps {
		if resp.Outcome == "RELEASED" {
			coalesced++
		}
	}
	if coalesced != processConcurrency-1 {
		t.Errorf("RELEASED answers = %d, want %d", coalesced, processConcurrency-1)
	}
	lockOps := r.Dynamo.CountsFor(r.LockTable)
	// The process's first lock call reads first (a new environment's
	// does, see lockcore.HotKeys): one GetItem that finds the lock free.
	if want := map[string]int{"GetItem": 1, "UpdateItem": 2}; !maps.Equal(lockOps, want) {
		t.Errorf("lock table requests = %v, want %v: the new process's first read, one acquire and one release, no poll", lockOps, want)
	}
	t.Logf("lock table requests %v, cache table requests %v", lockOps, r.Dynamo.CountsFor(r.CacheTable))
	// Each invocation printed its document before it answered; wait for
	// the pipe to deliver them all.
	lctx, lcancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer lcancel()
	lines := p.WaitLines(lctx, func(lines []sandbox.Line) bool {
		n := 0
		for _, l := range lines {
			if strings.Contains(l.Text, `"requestId"`) {
				n++
			}
		}
		return n >= processConcurrency
	})
	checkProcessEMF(t, lines, invs)
}

// checkProcessEMF checks the process's stdout: valid EMF lines only; one
// document per invocation that names exactly one request id, its own,
// exactly once; no request id in two documents; and the lock metrics of
// one holder and 15 coalesced followers.
func checkProcessEMF(t *testing.T, lines []sandbox.Line, invs []sandbox.Invocation) {
	t.Helper()
	docsOf := map[string]int{}
	sums := map[string]float64{}
	for _, l := range lines {
		doc, err := parseEMF(l.Text)
		if err != nil {
			t.Errorf("stdout line is not valid EMF: %v\n%s", err, l.Text)
			continue
		}
		if _, cold := doc["ColdStart"]; cold {
			continue // the process's one cold-start document, of no invocation
		}
		var ids []string
		for _, inv := range invs {
			if n := strings.Count(l.Text, inv.RequestID); n > 0 {
				ids = append(ids, inv.RequestID)
				if n != 1 {
					t.Errorf("document names request id %s %d times: %s", inv.RequestID, n, l.Text)
				}
			}
		}
		if len(ids) != 1 {
			t.Errorf("document names request ids %v, want exactly one: %s", ids, l.Text)
			continue
		}
		if doc["requestId"] != ids[0] {
			t.Errorf("document with requestId %v names %s", doc["requestId"], ids[0])
		}
		docsOf[ids[0]]++
		// The handler's own metric is in its invocation's document.
		own := map[any]string{"ACQUIRED": fetchcache.MetricUpstreamCall, "RELEASED": fetchcache.MetricCacheRead}[doc["lockOutcome"]]
		if doc[own] != 1.0 {
			t.Errorf("%v document without its handler's %s: %s", doc["lockOutcome"], own, l.Text)
		}
		for _, name := range []string{"LockAcquisitionSuccess", "LockCoalesced", fetchcache.MetricUpstreamCall, fetchcache.MetricCacheRead} {
			if v, ok := doc[name].(float64); ok {
				sums[name] += v
			}
		}
	}
	for _, inv := range invs {
		if docsOf[inv.RequestID] != 1 {
			t.Errorf("request %s: %d documents, want 1", inv.RequestID, docsOf[inv.RequestID])
		}
	}
	want := map[string]float64{"LockAcquisitionSuccess": 1, "LockCoalesced": processConcurrency - 1,
		fetchcache.MetricUpstreamCall: 1, fetchcache.MetricCacheRead: processConcurrency - 1}
	if !maps.Equal(sums, want) {
		t.Errorf("metric sums over the documents = %v, want %v", sums, want)
	}
}

func countLines(lines []sandbox.Line, substr string) int {
	n := 0
	for _, l := range lines {
		if strings.Contains(l.Text, substr) {
			n++
		}
	}
	return n
}

// gate is a reverse proxy to the upstream that holds every request until
// it is opened.
type gate struct {
	srv      *httptest.Server
	opened   chan struct{}
	openOnce sync.Once
}

func startGate(t *testing.T, target string) *gate {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	g := &gate{opened: make(chan struct{})}
	rp := httputil.NewSingleHostReverseProxy(u)
	g.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-g.opened:
		case <-r.Context().Done():
			return
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		g.open()
		g.srv.Close()
	})
	return g
}

func (g *gate) open() { g.openOnce.Do(func() { close(g.opened) }) }
