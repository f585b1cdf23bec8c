package lockcore_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/herdlock/herdlock/internal/dynalite"
	"github.com/herdlock/herdlock/lockcore"
)

// rotatingCredentials issues session credentials that expire: the first
// after first, every later one after an hour, as an assumed role's or a
// container's credentials do. It records when each token expires.
type rotatingCredentials struct {
	first time.Duration

	mu      sync.Mutex // guards the fields below
	issued  int
	expires map[string]time.Time
}

func (c *rotatingCredentials) Retrieve(context.Context) (aws.Credentials, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	life := time.Hour
	if c.issued == 0 {
		life = c.first
	}
	c.issued++
	token := fmt.Sprintf("token-%d", c.issued)
	exp := time.Now().Add(life)
	if c.expires == nil {
		c.expires = map[string]time.Time{}
	}
	c.expires[token] = exp
	return aws.Credentials{AccessKeyID: "herdlock", SecretAccessKey: "herdlock", SessionToken: token,
		CanExpire: true, Expires: exp, Source: "rotating"}, nil
}

func (c *rotatingCredentials) expiry(token string) (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	exp, ok := c.expires[token]
	return exp, ok
}

// expiringTokens answers, as DynamoDB does, HTTP 400 ExpiredTokenException
// to a request signed with a session token that has expired by the
// server's clock, which runs skew ahead of the client's: a request signed
// in the token's last moments (the client's credential cache still hands
// it out) is refused, and one signed after the cache refreshed it goes
// on. It signals rejected for every request it refused.
type expiringTokens struct {
	next     http.RoundTripper
	creds    *rotatingCredentials
	skew     time.Duration
	rejected chan struct{}
}

func (e *expiringTokens) RoundTrip(r *http.Request) (*http.Response, error) {
	exp, ok := e.creds.expiry(r.Header.Get("X-Amz-Security-Token"))
	if !ok || time.Now().Add(e.skew).Before(exp) {
		return e.next.RoundTrip(r)
	}
	if r.Body != nil {
		_, _ = io.Copy(io.Discard, r.Body)
		_ = r.Body.Close()
	}
	select {
	case e.rejected <- struct{}{}:
	default:
	}
	body := `{"__type":"com.amazon.coral.service#ExpiredTokenException","message":"The security token included in the request is expired"}`
	return &http.Response{
		Status: "400 Bad Request", StatusCode: http.StatusBadRequest, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:        http.Header{"Content-Type": {"application/x-amz-json-1.0"}, "X-Amzn-Requestid": {"expired"}},
		Body:          io.NopCloser(strings.NewReader(body)),
		ContentLength: int64(len(body)), Request: r,
	}, nil
}

// Session credentials that expire while a herd waits (an assumed role's,
// a container's) are refreshed by the SDK for the next request: an
// ExpiredTokenException says that this request was not applied, not that
// the next one will be refused. Waiters whose polls are refused in the
// token's last second poll on, and the holder's release, refused once, is
// retried: the herd ends RELEASED with the holder's result, on Dynoxide,
// instead of FAILED with a store_error, and a release that the waiters
// never see.
func TestExpiringCredentialsDoNotFailTheHerd(t *testing.T) {
	ctx := context.Background()
	dynoxideClient(t) // starts the shared server
	endpoint := sharedDynoxide.server.Endpoint()
	if err := lockcore.CreateTable(ctx, dynalite.NewClient(endpoint), "expiring"); err != nil {
		t.Fatalf("CreateTable() = %v", err)
	}
	creds := &rotatingCredentials{first: 1500 * time.Millisecond}
	tokens := &expiringTokens{next: http.DefaultTransport, creds: creds, skew: time.Second, rejected: make(chan struct{}, 64)}
	client := dynalite.NewClient(endpoint, func(o *dynamodb.Options) {
		o.Credentials = aws.NewCredentialsCache(creds)
		o.HTTPClient = &http.Client{Transport: tokens}
	})
	store, err := lockcore.NewDynamoStore(client, "expiring")
	if err != nil {
		t.Fatal(err)
	}
	holder := newLock(t, store, "holder", lockcore.WithHerd(lockcore.Herd{NoHotKeys: true}))
	mustAcquire(t, holder)

	const waiters = 4
	type result struct {
		res lockcore.WaitResult
		err error
	}
	results := make(chan result, waiters)
	for i := range waiters {
		l := newLock(t, store, fmt.Sprintf("waiter-%d", i))
		go func() {
			wctx, cancel := context.WithTimeout(ctx, 15*time.Second)
			defer cancel()
			res, err := l.TryAcquireElseWaitForRelease(wctx)
			results <- result{res, err}
		}()
	}
	// The holder finishes while the token is refused: after the store
	// refused a few of the waiters' polls.
	for range waiters {
		select {
		case <-tokens.rejected:
		case <-time.After(5 * time.Second):
			t.Fatal("no request was refused with an expired token")
		}
	}
	if err := holder.Release(ctx, lockcore.Success, "ref"); err != nil {
		t.Errorf("Release() = %v, want nil (a retry signs with the refreshed token)", err)
	}
	for range waiters {
		r := <-results
		if r.res.Outcome != lockcore.Released || r.err != nil || r.res.ResultRef != "ref" {
			t.Errorf("waiter: TryAcquireElseWaitForRelease() = %v (ref %q), %v; want RELEASED with ref", r.res.Outcome, r.res.ResultRef, r.err)
		}
	}
}

// An acquire refused with an expired token was not applied: on a free
// lock, the invocation goes on (it reads until its credentials are
// refreshed, and writes again) and is ACQUIRED, on Dynoxide, instead of
// failing with a store_error because the settling read found the lock
// free.
func TestExpiredTokenAcquireOnAFreeLockGoesOn(t *testing.T) {
	ctx := context.Background()
	dynoxideClient(t) // starts the shared server
	endpoint := sharedDynoxide.server.Endpoint()
	if err := lockcore.CreateTable(ctx, dynalite.NewClient(endpoint), "expiringfree"); err != nil {
		t.Fatalf("CreateTable() = %v", err)
	}
	// The server's clock is ahead by more than the first token's life:
	// every request signed with it is refused, until the cache renews it.
	creds := &rotatingCredentials{first: time.Second}
	tokens := &expiringTokens{next: http.DefaultTransport, creds: creds, skew: 2 * time.Second, rejected: make(chan struct{}, 64)}
	client := dynalite.NewClient(endpoint, func(o *dynamodb.Options) {
		o.Credentials = aws.NewCredentialsCache(creds)
		o.HTTPClient = &http.Client{Transport: tokens}
	})
	store, err := lockcore.NewDynamoStore(client, "expiringfree")
	if err != nil {
		t.Fatal(err)
	}
	l := newLock(t, store, "invocation", lockcore.WithHerd(lockcore.Herd{NoHotKeys: true}))
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	res, err := l.TryAcquireElseWaitForRelease(wctx)
	if len(tokens.rejected) == 0 {
		t.Error("no request was refused with an expired token")
	}
	if res.Outcome != lockcore.Acquired || err != nil {
		t.Fatalf("TryAcquireElseWaitForRelease() = %v, %v; want ACQUIRED once the credentials are refreshed", res.Outcome, err)
	}
	mustRelease(t, l, lockcore.Success, "ref")
}
