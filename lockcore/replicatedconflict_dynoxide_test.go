package lockcore_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/herdlock/herdlock/internal/dynalite"
	"github.com/herdlock/herdlock/lockcore"
)

// replicatedConflict answers the first n UpdateItem requests through it as
// a table with multi-Region strong consistency answers a write to an item
// that a request in another Region is modifying: HTTP 400
// ReplicatedWriteConflictException, not applied (the SDKs' models mark it
// safe to retry). Everything else goes to next.
type replicatedConflict struct {
	next http.RoundTripper
	n    int64
	seen atomic.Int64
}

func (c *replicatedConflict) RoundTrip(r *http.Request) (*http.Response, error) {
	if !strings.HasSuffix(r.Header.Get("X-Amz-Target"), ".UpdateItem") || c.seen.Add(1) > c.n {
		return c.next.RoundTrip(r)
	}
	if r.Body != nil {
		_, _ = io.Copy(io.Discard, r.Body)
		_ = r.Body.Close()
	}
	body := `{"__type":"com.amazonaws.dynamodb.v20120810#ReplicatedWriteConflictException","message":"The request was rejected because one or more items in the request are being modified by a request in another Region."}`
	return &http.Response{
		Status: "400 Bad Request", StatusCode: http.StatusBadRequest, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:        http.Header{"Content-Type": {"application/x-amz-json-1.0"}, "X-Amzn-Requestid": {"conflict"}},
		Body:          io.NopCloser(strings.NewReader(body)),
		ContentLength: int64(len(body)), Request: r,
	}, nil
}

// On a table with multi-Region strong consistency (which the protocol
// supports), an acquire that races a holder's write in another Region is
// answered ReplicatedWriteConflictException: a conflict, as a failed
// condition is, not a refusal. The invocation waits on the other Region's
// holder and is RELEASED with its result, on Dynoxide, instead of failing
// at once with a store_error.
func TestReplicatedWriteConflictWaits(t *testing.T) {
	ctx := context.Background()
	dynoxideClient(t) // starts the shared server
	endpoint := sharedDynoxide.server.Endpoint()
	direct := dynalite.NewClient(endpoint)
	if err := lockcore.CreateTable(ctx, direct, "mrsc"); err != nil {
		t.Fatalf("CreateTable() = %v", err)
	}
	other, err := lockcore.NewDynamoStore(direct, "mrsc") // the other Region's
	if err != nil {
		t.Fatal(err)
	}
	conflict := &replicatedConflict{next: http.DefaultTransport, n: 1}
	store, err := lockcore.NewDynamoStore(dynalite.NewClient(endpoint, func(o *dynamodb.Options) {
		o.HTTPClient = &http.Client{Transport: conflict}
	}), "mrsc")
	if err != nil {
		t.Fatal(err)
	}
	holder := newLock(t, other, "holder-other-region")
	mustAcquire(t, holder)
	type result struct {
		res lockcore.WaitResult
		err error
	}
	done := make(chan result, 1)
	l := newLock(t, store, "invocation", lockcore.WithHerd(lockcore.Herd{NoHotKeys: true}))
	go func() {
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		res, err := l.TryAcquireElseWaitForRelease(wctx)
		done <- result{res, err}
	}()
	select {
	case r := <-done:
		t.Fatalf("TryAcquireElseWaitForRelease() = %v, %v while the other Region holds the lock; want it to wait", r.res.Outcome, r.err)
	case <-time.After(time.Second): // the holder's work
	}
	mustRelease(t, holder, lockcore.Success, "ref")
	r := <-done
	if r.res.Outcome != lockcore.Released || r.err != nil || r.res.ResultRef != "ref" {
		t.Errorf("TryAcquireElseWaitForRelease() = %v (ref %q), %v; want RELEASED with ref", r.res.Outcome, r.res.ResultRef, r.err)
	}
	if conflict.seen.Load() == 0 {
		t.Error("no write met the conflict")
	}
}
