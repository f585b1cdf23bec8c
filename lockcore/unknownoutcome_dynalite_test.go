package lockcore_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/herdlock/herdlock/internal/dynalite"
	"github.com/herdlock/herdlock/lockcore"
)

// applied5xxThenThrottle is a proxy in front of a DynamoDB server that,
// once armed, applies the next UpdateItem but answers it with a 500
// InternalServerError (a 5xx on a write may have been applied), and then
// answers the next UpdateItem, the SDK's or the store's retry, with a
// throttle (or, when retryCode is set, that 400 error) without forwarding
// it. Everything else is forwarded.
type applied5xxThenThrottle struct {
	upstream  *httputil.ReverseProxy
	retryCode string // the retry's 400 error; "": ProvisionedThroughputExceededException
	armed     atomic.Bool
	step      atomic.Int32
}

func (p *applied5xxThenThrottle) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !p.armed.Load() || !strings.HasSuffix(r.Header.Get("X-Amz-Target"), ".UpdateItem") {
		p.upstream.ServeHTTP(w, r)
		return
	}
	switch p.step.Add(1) {
	case 1:
		p.upstream.ServeHTTP(httptest.NewRecorder(), r) // applied, answer lost
		writeDynamoError(w, http.StatusInternalServerError, "InternalServerError")
	case 2:
		p.armed.Store(false)
		code := p.retryCode
		if code == "" {
			code = "ProvisionedThroughputExceededException"
		}
		writeDynamoError(w, http.StatusBadRequest, code)
	}
}

func writeDynamoError(w http.ResponseWriter, status int, code string) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(`{"__type":"com.amazonaws.dynamodb.v20120810#` + code + `","message":"injected"}`))
}

// An acquire applied but answered with a 5xx, whose retry is throttled,
// is the invocation's own: it is ACQUIRED at once (recognised by the
// settling read), not left as a ghost that the invocation waits on as if
// another holder had it.
func TestAcquireApplied5xxThenThrottledOnDynalite(t *testing.T) {
	ctx := context.Background()
	dynaliteClient(t) // starts the shared server
	up, err := url.Parse(sharedDynalite.server.Endpoint())
	if err != nil {
		t.Fatal(err)
	}
	p := &applied5xxThenThrottle{upstream: httputil.NewSingleHostReverseProxy(up)}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	client := dynalite.NewClient(srv.URL)
	if err := lockcore.CreateTable(ctx, client, "unknownoutcome"); err != nil {
		t.Fatalf("CreateTable() = %v", err)
	}
	store, err := lockcore.NewDynamoStore(client, "unknownoutcome")
	if err != nil {
		t.Fatal(err)
	}
	l := newLock(t, store, "holder", lockcore.WithMaxWait(3*time.Second))
	p.armed.Store(true)
	start := time.Now()
	res, err := l.TryAcquireElseWaitForRelease(ctx)
	if res.Outcome != lockcore.Acquired || err != nil {
		t.Fatalf("TryAcquireElseWaitForRelease() = %v, %v after %v, want ACQUIRED (our own write)", res.Outcome, err, time.Since(start))
	}
	if p.step.Load() != 2 {
		t.Errorf("faults injected = %d, want 2 (an applied 5xx, then a throttle)", p.step.Load())
	}
	it, _, err := store.Get(ctx, l.Key())
	if err != nil || it.Revision != l.Revision() || it.Fence != res.Fence {
		t.Errorf("item = revision %q fence %d (%v), want ours: %q fence %d", it.Revision, it.Fence, err, l.Revision(), res.Fence)
	}
	mustRelease(t, l, lockcore.Success, "ref")
}

// An acquire applied but answered with a 5xx, whose retry is refused (the
// role's access key was disabled between the two attempts, or a policy
// change reached the table in between), is still an unknown outcome: the refusal
// says only that the retry was not applied. The settling read recognises
// our write, and the invocation is ACQUIRED, instead of failing with a
// store_error while its applied write holds the lock for nobody until the
// lease lapses.
func TestAcquireApplied5xxThenRefusedOnDynalite(t *testing.T) {
	ctx := context.Background()
	dynaliteClient(t) // starts the shared server
	up, err := url.Parse(sharedDynalite.server.Endpoint())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, retryCode string
	}{
		{"access key no longer recognised", "UnrecognizedClientException"},
		{"permission withdrawn", "AccessDeniedException"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &applied5xxThenThrottle{upstream: httputil.NewSingleHostReverseProxy(up), retryCode: tt.retryCode}
			srv := httptest.NewServer(p)
			t.Cleanup(srv.Close)
			client := dynalite.NewClient(srv.URL)
			table := fmt.Sprintf("refusedretry%d", i)
			if err := lockcore.CreateTable(ctx, client, table); err != nil {
				t.Fatalf("CreateTable() = %v", err)
			}
			store, err := lockcore.NewDynamoStore(client, table)
			if err != nil {
				t.Fatal(err)
			}
			l := newLock(t, store, "holder", lockcore.WithMaxWait(3*time.Second), lockcore.WithHerd(lockcore.Herd{NoHotKeys: true}))
			p.armed.Store(true)
			res, err := l.TryAcquireElseWaitForRelease(ctx)
			if p.step.Load() != 2 {
				t.Errorf("faults injected = %d, want 2 (an applied 5xx, then %s)", p.step.Load(), tt.retryCode)
			}
			it, _, gerr := store.Get(ctx, l.Key())
			if res.Outcome != lockcore.Acquired || err != nil {
				t.Fatalf("TryAcquireElseWaitForRelease() = %v, %v; want ACQUIRED (our own write); the item has revision %q, released %v (%v)",
					res.Outcome, err, it.Revision, it.Released, gerr)
			}
			if gerr != nil || it.Revision != l.Revision() || it.Fence != res.Fence {
				t.Errorf("item = revision %q fence %d (%v), want ours: %q fence %d", it.Revision, it.Fence, gerr, l.Revision(), res.Fence)
			}
			mustRelease(t, l, lockcore.Success, "ref")
		})
	}
}
