package lockcore_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/herdlock/herdlock/internal/capacity"
	"github.com/herdlock/herdlock/internal/dynalite"
	"github.com/herdlock/herdlock/lockcore"
)

// countingTransport counts the requests that go through it.
type countingTransport struct {
	next http.RoundTripper
	n    atomic.Int64
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.next.RoundTrip(r)
}

// A misconfigured function fails at once, on Dynoxide: against a table
// that does not exist (ResourceNotFoundException), and with a role that may
// read but not write the table (AccessDeniedException, answered as
// DynamoDB answers it), TryAcquireElseWaitForRelease returns FAILED with a
// store_error that matches ErrStoreRefused and names the error code, after
// the first refused request: no settling reads, no retries, nothing of the
// 15 s the invocation has left spent waiting. The error never carries the
// server's message, which names the role.
func TestRefusedStoreFailsAtOnce(t *testing.T) {
	ctx := context.Background()
	dynoxideClient(t) // starts the shared server
	endpoint := sharedDynoxide.server.Endpoint()
	if err := lockcore.CreateTable(ctx, dynalite.NewClient(endpoint), "refusals"); err != nil {
		t.Fatalf("CreateTable() = %v", err)
	}
	tests := []struct {
		name      string
		table     string
		deny      []string // operations the role may not call
		opts      []lockcore.Option
		wantCode  string
		wantCalls int64 // requests sent, at most
	}{
		{"missing table, first call reads first", "no-such-table", nil, nil, "ResourceNotFoundException", 1},
		{"missing table, writing first", "no-such-table", nil, []lockcore.Option{lockcore.WithHerd(lockcore.Herd{NoHotKeys: true})}, "ResourceNotFoundException", 1},
		{"role may not write, first call reads first", "refusals", []string{"UpdateItem"}, nil, "AccessDeniedException", 2},
		{"role may not write, writing first", "refusals", []string{"UpdateItem"}, []lockcore.Option{lockcore.WithHerd(lockcore.Herd{NoHotKeys: true})}, "AccessDeniedException", 1},
		{"role may not read or write", "refusals", []string{"GetItem", "UpdateItem"}, nil, "AccessDeniedException", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			counter := &countingTransport{next: capacity.Deny(http.DefaultTransport, tt.deny...)}
			client := dynalite.NewClient(endpoint, func(o *dynamodb.Options) { o.HTTPClient = &http.Client{Transport: counter} })
			store, err := lockcore.NewDynamoStore(client, tt.table)
			if err != nil {
				t.Fatal(err)
			}
			l := newLock(t, store, "invocation", append([]lockcore.Option{lockcore.WithMaxWait(time.Minute)}, tt.opts...)...)
			ictx, cancel := context.WithTimeout(ctx, 15*time.Second) // the invocation's deadline
			defer cancel()
			start := time.Now()
			res, err := l.TryAcquireElseWaitForRelease(ictx)
			took := time.Since(start)
			var ae *lockcore.AcquireError
			if res.Outcome != lockcore.Failed || !errors.As(err, &ae) || ae.Reason != lockcore.ReasonStore || !errors.Is(err, lockcore.ErrStoreRefused) {
				t.Fatalf("TryAcquireElseWaitForRelease() = %v, %v; want FAILED with a store_error matching ErrStoreRefused", res.Outcome, err)
			}
			if !strings.Contains(err.Error(), tt.wantCode) {
				t.Errorf("error %q does not name %s", err, tt.wantCode)
			}
			if msg := err.Error(); strings.Contains(msg, capacity.DeniedRole) || strings.Contains(msg, "not authorized") || strings.Contains(msg, "not found") {
				t.Errorf("error %q carries the server's message", msg)
			}
			if n := counter.n.Load(); n > tt.wantCalls {
				t.Errorf("requests sent = %d, want at most %d (no settling reads, no retries)", n, tt.wantCalls)
			}
			t.Logf("FAILED after %v and %d requests: %v", took, counter.n.Load(), err)
		})
	}
}

// switchTransport sends requests to deny while on is set, else to next.
type switchTransport struct {
	next, deny http.RoundTripper
	on         atomic.Bool
}

func (s *switchTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if s.on.Load() {
		return s.deny.RoundTrip(r)
	}
	return s.next.RoundTrip(r)
}

// A release that the store refuses (the role lost its write permission
// while the lock was held) is not retried: Release returns
// ErrReleaseFailed, naming the code, after one request, instead of five
// attempts with backoff; the lease then lapses on its own.
func TestRefusedReleaseStopsAtOnce(t *testing.T) {
	ctx := context.Background()
	dynoxideClient(t) // starts the shared server
	endpoint := sharedDynoxide.server.Endpoint()
	if err := lockcore.CreateTable(ctx, dynalite.NewClient(endpoint), "refusals"); err != nil {
		t.Fatalf("CreateTable() = %v", err)
	}
	sw := &switchTransport{next: http.DefaultTransport, deny: capacity.Deny(http.DefaultTransport, "UpdateItem")}
	counter := &countingTransport{next: sw}
	client := dynalite.NewClient(endpoint, func(o *dynamodb.Options) { o.HTTPClient = &http.Client{Transport: counter} })
	store, err := lockcore.NewDynamoStore(client, "refusals")
	if err != nil {
		t.Fatal(err)
	}
	l := newLock(t, store, "holder")
	mustAcquire(t, l)
	sw.on.Store(true)
	before := counter.n.Load()
	err = l.Release(ctx, lockcore.Success, "ref")
	if !errors.Is(err, lockcore.ErrReleaseFailed) || !errors.Is(err, lockcore.ErrStoreRefused) || !strings.Contains(err.Error(), "AccessDeniedException") {
		t.Fatalf("Release() = %v; want ErrReleaseFailed and ErrStoreRefused naming AccessDeniedException", err)
	}
	if n := counter.n.Load() - before; n != 1 {
		t.Errorf("release requests = %d, want 1", n)
	}
}
