package lockmw_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/herdlock/herdlock/internal/dynalite"
	"github.com/herdlock/herdlock/internal/dynoxide/dynoxidetest"
	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/lockcore/storeapi"
	"github.com/herdlock/herdlock/middleware/lockmw"
)

// With WithTableCheck, New checks the store's table on Dynoxide once and
// returns a configuration error naming what is wrong: a missing table, a
// table without TTL on storeapi.AttrTTL, a store that cannot check. A lock
// table passes, and without the option New makes no such call.
func TestNewWithTableCheck(t *testing.T) {
	srv := dynoxidetest.Start(t)
	client := dynalite.NewClient(srv.Endpoint())
	ctx := t.Context()
	for _, table := range []string{"locks", "nottl"} {
		if err := lockcore.CreateTable(ctx, client, table); err != nil {
			t.Fatalf("CreateTable(%s) = %v", table, err)
		}
	}
	if _, err := client.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{TableName: aws.String("locks"),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String(storeapi.AttrTTL), Enabled: aws.Bool(true)}}); err != nil {
		t.Fatalf("UpdateTimeToLive() = %v", err)
	}
	dynamo := func(table string) storeapi.Store {
		s, err := lockcore.NewDynamoStore(client, table)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	handler := func(context.Context, string) (string, error) { return "", nil }
	key := func(_ context.Context, in string) (string, error) { return in, nil }
	tests := []struct {
		name     string
		store    storeapi.Store
		opts     []lockmw.Option
		wantText string // "": New returns nil
	}{
		{"a lock table", dynamo("locks"), []lockmw.Option{lockmw.WithTableCheck()}, ""},
		{"missing table", dynamo("missing"), []lockmw.Option{lockmw.WithTableCheck()}, "the table does not exist"},
		{"missing table, no check", dynamo("missing"), nil, ""},
		{"TTL off", dynamo("nottl"), []lockmw.Option{lockmw.WithTableCheck()}, "time to live is not enabled"},
		{"a store without CheckTable", lockcore.NewMemoryStore(), []lockmw.Option{lockmw.WithTableCheck()}, "has no CheckTable method"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := append([]lockmw.Option{lockmw.WithHolder(lockmw.Holder{AccountID: 1, AppID: 1}), lockmw.WithLockGroup("g")}, tt.opts...)
			_, err := lockmw.New(handler, tt.store, key, opts...)
			switch {
			case tt.wantText == "" && err != nil:
				t.Fatalf("New() = %v, want nil", err)
			case tt.wantText != "" && (err == nil || !errors.Is(err, lockcore.ErrConfig) || !strings.Contains(err.Error(), tt.wantText)):
				t.Fatalf("New() = %v; want an ErrConfig naming %q", err, tt.wantText)
			}
		})
	}
}

// failingDescribe answers the first n DescribeTable requests through it
// with a status and error code, as DynamoDB answers a request it could
// not serve at that moment, without forwarding them; everything else goes
// to next.
type failingDescribe struct {
	next   http.RoundTripper
	status int
	code   string
	n      int64
	seen   atomic.Int64
}

func (f *failingDescribe) RoundTrip(r *http.Request) (*http.Response, error) {
	if !strings.HasSuffix(r.Header.Get("X-Amz-Target"), ".DescribeTable") || f.seen.Add(1) > f.n {
		return f.next.RoundTrip(r)
	}
	if r.Body != nil {
		_, _ = io.Copy(io.Discard, r.Body)
		_ = r.Body.Close()
	}
	body := `{"__type":"com.amazonaws.dynamodb.v20120810#` + f.code + `","message":"injected"}`
	return &http.Response{
		Status: http.StatusText(f.status), StatusCode: f.status, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:        http.Header{"Content-Type": {"application/x-amz-json-1.0"}, "X-Amzn-Requestid": {"injected"}},
		Body:          io.NopCloser(strings.NewReader(body)),
		ContentLength: int64(len(body)), Request: r,
	}, nil
}

// A table check that the store could not answer at that moment (a 5xx
// through all of the SDK's attempts, a throttled DescribeTable in a cold
// start storm) proves nothing about the table: New does not make it a
// configuration error, which would fail every invocation of the execution
// environment (Wrap) although the table is a lock table and the lock
// works. The handler is built, and it serves an invocation.
func TestTableCheckTransientErrorIsNoConfigError(t *testing.T) {
	srv := dynoxidetest.Start(t)
	ctx := t.Context()
	direct := dynalite.NewClient(srv.Endpoint())
	if err := lockcore.CreateTable(ctx, direct, "locks"); err != nil {
		t.Fatalf("CreateTable() = %v", err)
	}
	if _, err := direct.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{TableName: aws.String("locks"),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String(storeapi.AttrTTL), Enabled: aws.Bool(true)}}); err != nil {
		t.Fatalf("UpdateTimeToLive() = %v", err)
	}
	tests := []struct {
		name   string
		status int
		code   string
	}{
		{"5xx through every attempt", http.StatusInternalServerError, "InternalServerError"},
		{"throttled", http.StatusBadRequest, "ThrottlingException"},
		{"limit exceeded", http.StatusBadRequest, "LimitExceededException"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fail := &failingDescribe{next: http.DefaultTransport, status: tt.status, code: tt.code, n: 10}
			client := dynalite.NewClient(srv.Endpoint(), func(o *dynamodb.Options) { o.HTTPClient = &http.Client{Transport: fail} })
			store, err := lockcore.NewDynamoStore(client, "locks")
			if err != nil {
				t.Fatal(err)
			}
			calls := 0
			handler := func(context.Context, string) (string, error) { calls++; return "done", nil }
			key := func(_ context.Context, in string) (string, error) { return in, nil }
			h, err := lockmw.New(handler, store, key, lockmw.WithHolder(lockmw.Holder{AccountID: 1, AppID: 1}), lockmw.WithLockGroup("g"),
				lockmw.WithTableCheck(), lockmw.WithTelemetry(lockmw.Telemetry{Logger: slog.New(slog.DiscardHandler)}))
			if err != nil {
				t.Fatalf("New() = %v; want a handler (the table is a lock table; the check got no answer)", err)
			}
			if fail.seen.Load() == 0 {
				t.Fatal("no DescribeTable was sent")
			}
			ictx, cancel := invocationContext(ctx, 10*time.Second, "req-"+tt.code)
			defer cancel()
			if out, err := h(ictx, "k-"+tt.code); err != nil || out != "done" || calls != 1 {
				t.Errorf("handler = %q, %v (%d calls), want done, nil (1 call)", out, err, calls)
			}
		})
	}
}
