package bench

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/truora/minidyn/server"

	"github.com/herdlock/herdlock/internal/capacity"
	"github.com/herdlock/herdlock/lockcore"
)

// Round trip of one simulated DynamoDB request: uniform in [HotRTTMin,
// HotRTTMax], half on the way there and half on the way back.
const (
	HotRTTMin = 3 * time.Millisecond
	HotRTTMax = 8 * time.Millisecond
)

// HotEnv is the world of the hot-key herds: the capacity model at
// DynamoDB's per-item limits in front of an in-process minidyn server
// (which, like DynamoDB and unlike dynalite, returns the item with a failed
// condition, so no fallback reads distort the read figures), reached over a
// simulated network with a round trip of [HotRTTMin, HotRTTMax]. Every
// invocation gets its own SDK client with the SDK's default retryer, as a
// Lambda execution environment would.
//
// The herds run inside a testing/synctest bubble: time is virtual, so the
// figures depend on the protocol, the model and the simulated network, not
// on how fast or loaded the machine is (thousands of SDK clients signing
// and parsing requests would otherwise saturate a small machine long before
// the item's limits). Start the HotEnv inside the bubble. It is safe for
// concurrent use.
type HotEnv struct {
	Proxy *capacity.Proxy
	// Real is true for an env in real time in front of a real server
	// (see StartRealHotEnv).
	Real bool
	rt   http.RoundTripper
}

// StartHotEnv starts the model with cfg (Upstream and Transport are set
// here) and creates the lock table.
func StartHotEnv(ctx context.Context, cfg capacity.Config) (*HotEnv, error) {
	cfg.Upstream = "http://minidyn.invalid"
	cfg.Transport = capacity.HandlerTransport(server.NewServer())
	p, err := capacity.New(cfg)
	if err != nil {
		return nil, err
	}
	e := &HotEnv{Proxy: p, rt: &simNetwork{h: p}}
	if err := lockcore.CreateTable(ctx, e.NewClient(), LockTable); err != nil {
		return nil, err
	}
	return e, nil
}

// StartRealHotEnv starts the model with cfg in front of the DynamoDB-API
// server at endpoint (Dynoxide), in real time, and creates the lock table
// there. Clients reach the model in process (no network hop, so that
// thousands of SDK clients on a small machine spend their CPU on their
// requests, not on connections); the model reaches the server over HTTP.
// Use it outside a synctest bubble.
func StartRealHotEnv(ctx context.Context, endpoint string, cfg capacity.Config) (*HotEnv, error) {
	cfg.Upstream = endpoint
	cfg.Transport = &http.Transport{Proxy: nil, MaxIdleConns: 512, MaxIdleConnsPerHost: 512, IdleConnTimeout: 30 * time.Second}
	p, err := capacity.New(cfg)
	if err != nil {
		return nil, err
	}
	e := &HotEnv{Proxy: p, Real: true, rt: capacity.HandlerTransport(p)}
	if err := lockcore.CreateTable(ctx, e.NewClient(), LockTable); err != nil && !isTableExists(err) {
		return nil, err
	}
	return e, nil
}

func isTableExists(err error) bool {
	var riu *types.ResourceInUseException
	return errors.As(err, &riu)
}

// NewClient returns a fresh SDK client through the model, with the SDK's
// default standard retryer (3 attempts, up to 20 s of backoff, a retry
// quota of 500 tokens) and checksum validation on (the model adds a correct
// x-amz-crc32 to every answer).
func (e *HotEnv) NewClient() *dynamodb.Client {
	return dynamodb.New(dynamodb.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String("http://dynamodb.sim"),
		Credentials:  credentials.NewStaticCredentialsProvider("herdlock", "herdlock", ""),
		Retryer:      retry.NewStandard(),
		HTTPClient:   &http.Client{Transport: e.rt},
	})
}

// simNetwork carries a request to h in process, taking half a round trip
// each way. A request whose context ends on the way there is lost before
// it is served; one whose context ends on the way back was served and its
// answer is lost, as on a real network.
type simNetwork struct{ h http.Handler }

func (n *simNetwork) RoundTrip(r *http.Request) (*http.Response, error) {
	rtt := HotRTTMin + rand.N(HotRTTMax-HotRTTMin+1)
	if err := sleepCtx(r.Context(), rtt/2); err != nil {
		return nil, err
	}
	rec := httptest.NewRecorder()
	n.h.ServeHTTP(rec, r)
	if err := sleepCtx(r.Context(), rtt-rtt/2); err != nil {
		return nil, err
	}
	resp := rec.Result()
	resp.Request = r
	return resp, nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
