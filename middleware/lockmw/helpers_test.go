package lockmw_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/herdlock/herdlock/emf"
	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/lockcore/storeapi"
	"github.com/herdlock/herdlock/middleware/lockmw"
)

const testARN = "arn:aws:lambda:eu-west-1:123456789012:function:fx-rates"

// invocationContext builds a context the way the Lambda runtime does: a
// deadline, then the Lambda context with the request id and function ARN.
func invocationContext(parent context.Context, timeout time.Duration, reqID string) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithDeadline(parent, time.Now().Add(timeout))
	ctx = lambdacontext.NewContext(ctx, &lambdacontext.LambdaContext{
		AwsRequestID:       reqID,
		InvokedFunctionArn: testARN,
	})
	return ctx, cancel
}

// syncBuffer is a bytes.Buffer safe for concurrent use.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// emfDocs parses the JSON lines in s.
func emfDocs(t *testing.T, s string) []map[string]any {
	t.Helper()
	var docs []map[string]any
	for line := range strings.SplitSeq(strings.TrimSpace(s), "\n") {
		if line == "" {
			continue
		}
		var d map[string]any
		if err := json.Unmarshal([]byte(line), &d); err != nil {
			t.Fatalf("metrics line %q is not JSON: %v", line, err)
		}
		docs = append(docs, d)
	}
	return docs
}

func newTestMetrics(t testing.TB, w io.Writer) *emf.Metrics {
	t.Helper()
	m, err := emf.New(emf.WithNamespace("herdlock-test"), emf.WithService("svc"), emf.WithWriter(w))
	if err != nil {
		t.Fatalf("emf.New() = %v", err)
	}
	return m
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// event is the test handlers' input.
// Req and N name an invocation, for the tests that run many at once.
type event struct {
	Key string
	Req string
	N   int
}

func keyOf(_ context.Context, e event) (string, error) { return e.Key, nil }

// faultStore wraps a Store and can fail, drop or hang its calls.
type faultStore struct {
	storeapi.Store
	mu          sync.Mutex // guards the fields below
	acquireErr  error
	hang        bool // Acquire and Get block until their context ends
	dropRelease bool // Release fails without reaching the store
	renewLost   bool // Renew reports the lock taken by another holder
}

func (s *faultStore) get() (hang, dropRelease, renewLost bool, acquireErr error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hang, s.dropRelease, s.renewLost, s.acquireErr
}

func (s *faultStore) set(f func(*faultStore)) {
	s.mu.Lock()
	f(s)
	s.mu.Unlock()
}

func (s *faultStore) Acquire(ctx context.Context, req storeapi.AcquireRequest) (storeapi.Item, error) {
	hang, _, _, aerr := s.get()
	if hang {
		<-ctx.Done()
		return storeapi.Item{}, ctx.Err()
	}
	if aerr != nil {
		return storeapi.Item{}, aerr
	}
	return s.Store.Acquire(ctx, req)
}

func (s *faultStore) Get(ctx context.Context, key lockcore.Key) (storeapi.Item, bool, error) {
	if hang, _, _, _ := s.get(); hang {
		<-ctx.Done()
		return storeapi.Item{}, false, ctx.Err()
	}
	return s.Store.Get(ctx, key)
}

func (s *faultStore) Renew(ctx context.Context, req storeapi.RenewRequest) (storeapi.Item, error) {
	if _, _, lost, _ := s.get(); lost {
		return storeapi.Item{}, &storeapi.ConditionError{Op: "renew", Current: &storeapi.Item{Revision: "someone-else"}}
	}
	return s.Store.Renew(ctx, req)
}

func (s *faultStore) Release(ctx context.Context, req storeapi.ReleaseRequest) (storeapi.Item, error) {
	if _, drop, _, _ := s.get(); drop {
		return storeapi.Item{}, errDropped
	}
	return s.Store.Release(ctx, req)
}

var errDropped = errors.New("test: release dropped")

// item reads the lock item of key from s.
func item(t *testing.T, s storeapi.Store, key lockcore.Key) storeapi.Item {
	t.Helper()
	it, found, err := s.Get(context.Background(), key)
	if err != nil || !found {
		t.Fatalf("Get(%v) = found %v, %v; want the item", key, found, err)
	}
	return it
}

// coalescing is the option of a test run with in-process coalescing on
// (the default: an option that changes nothing) or off.
func coalescing(on bool) lockmw.Option {
	if on {
		return lockmw.WithLockOptions()
	}
	return lockmw.WithoutCoalescing()
}
