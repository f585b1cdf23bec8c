// Package localrun starts the example function locally on real pieces, for
// the end-to-end test and the demo: a counting proxy in front of a
// DynamoDB-API server (Dynoxide) with the lock and cache tables, the
// rate-limited upstream, and N Runtime Interface Emulator sandboxes running
// the real bootstrap.
package localrun

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/herdlock/herdlock/examples/lambda-fetch-cache/fetchcache"
	"github.com/herdlock/herdlock/internal/dynalite"
	"github.com/herdlock/herdlock/internal/sandbox"
	"github.com/herdlock/herdlock/lockcore"
)

// Package is the import path of the function, for sandbox.BuildBootstrap.
const Package = "github.com/herdlock/herdlock/examples/lambda-fetch-cache"

// Options configures [Start].
type Options struct {
	// DynamoEndpoint is a running DynamoDB-API server, such as Dynoxide.
	// Required.
	DynamoEndpoint string
	// RIE and Bootstrap are the emulator and the function binaries.
	// Required.
	RIE, Bootstrap string
	// N is the number of emulator sandboxes. 0 starts none (and needs no
	// RIE): use [Run.StartProcess] for one process running many
	// invocations at once.
	N int
	// Timeout is the function timeout, whole seconds. Default 10s.
	Timeout time.Duration
	// CacheTTL is the cache's freshness. Default 5m.
	CacheTTL time.Duration
	// Upstream configures the upstream. Default: no latency, 5 requests per
	// second.
	Upstream sandbox.UpstreamConfig
	// LogLevel is the function's AWS_LAMBDA_LOG_LEVEL. Default ERROR.
	LogLevel string
	// AnswerMode is the function's ANSWER_MODE: fetchcache.AnswerCache
	// (the default) or fetchcache.AnswerInline, which has no cache table.
	AnswerMode string
	// Output, when set, receives the sandboxes' stdout lines.
	Output io.Writer
	// Env is added to the function's environment ("NAME=value"); a later
	// value of a variable wins.
	Env []string
}

// Run is one local stack. Close stops all of it.
type Run struct {
	Upstream   *sandbox.Upstream
	Dynamo     *sandbox.CountingProxy
	Pool       *sandbox.Pool
	LockTable  string
	CacheTable string // empty in the inline answer mode
	opts       Options
	pools      []*sandbox.Pool
	procs      []*sandbox.Process
}

// Start creates the tables and starts the upstream, the proxy and N
// sandboxes.
func Start(ctx context.Context, o Options) (r *Run, err error) {
	if o.DynamoEndpoint == "" || o.Bootstrap == "" || o.N < 0 || (o.N > 0 && o.RIE == "") {
		return nil, errors.New("localrun: DynamoEndpoint and Bootstrap are required, and RIE when N > 0")
	}
	if o.Timeout == 0 {
		o.Timeout = 10 * time.Second
	}
	if o.CacheTTL == 0 {
		o.CacheTTL = 5 * time.Minute
	}
	if o.Upstream.Limit == 0 {
		o.Upstream.Limit = 5
	}
	if o.LogLevel == "" {
		o.LogLevel = "ERROR"
	}
	if o.AnswerMode == "" {
		o.AnswerMode = fetchcache.AnswerCache
	}
	suffix := randomSuffix()
	r = &Run{opts: o, LockTable: "locks-" + suffix}
	if o.AnswerMode == fetchcache.AnswerCache {
		r.CacheTable = "cache-" + suffix
	}
	defer func() {
		if err != nil {
			r.Close()
		}
	}()
	client := dynalite.NewClient(o.DynamoEndpoint)
	if err := lockcore.CreateTable(ctx, client, r.LockTable); err != nil {
		return nil, err
	}
	if r.CacheTable != "" {
		if err := fetchcache.CreateCacheTable(ctx, client, r.CacheTable); err != nil {
			return nil, err
		}
	}
	if r.Dynamo, err = sandbox.StartCountingProxy(o.DynamoEndpoint); err != nil {
		return nil, err
	}
	r.Upstream = sandbox.StartUpstream(o.Upstream)
	if o.N == 0 {
		return r, nil
	}
	if r.Pool, err = r.StartPool(ctx, o.N, o.Timeout); err != nil {
		return nil, err
	}
	return r, nil
}

// StartProcess starts the function as one process that runs concurrency
// invocations at once (AWS_LAMBDA_MAX_CONCURRENCY), as an execution
// environment of Lambda Managed Instances does, against its own Runtime
// API server, with env added to the stack's environment (a later value
// of a variable wins). Close stops it too.
func (r *Run) StartProcess(ctx context.Context, concurrency int, timeout time.Duration, env ...string) (*sandbox.Process, error) {
	p, err := sandbox.StartProcess(ctx, sandbox.ProcessConfig{
		Bootstrap:   r.opts.Bootstrap,
		Env:         append(r.Env(), env...),
		Concurrency: concurrency,
		Timeout:     timeout,
		Output:      r.opts.Output,
	})
	if err != nil {
		return nil, err
	}
	r.procs = append(r.procs, p)
	return p, nil
}

// StartPool starts n more sandboxes of the same function with another
// timeout. Close stops them too.
func (r *Run) StartPool(ctx context.Context, n int, timeout time.Duration) (*sandbox.Pool, error) {
	p, err := sandbox.StartPool(ctx, n, sandbox.Config{
		RIE:       r.opts.RIE,
		Bootstrap: r.opts.Bootstrap,
		Env:       r.Env(),
		Timeout:   timeout,
		Output:    r.opts.Output,
	})
	if err != nil {
		return nil, err
	}
	r.pools = append(r.pools, p)
	return p, nil
}

// Env returns the function's environment in this stack.
func (r *Run) Env() []string {
	return append([]string{
		fetchcache.EnvLockTable + "=" + r.LockTable,
		fetchcache.EnvCacheTable + "=" + r.CacheTable,
		fetchcache.EnvAnswerMode + "=" + r.opts.AnswerMode,
		fetchcache.EnvUpstreamURL + "=" + r.Upstream.URL(),
		fetchcache.EnvServiceName + "=lambda-fetch-cache",
		fetchcache.EnvMetricsNamespace + "=herdlock-local",
		fetchcache.EnvLambdaLogLevel + "=" + r.opts.LogLevel,
		fetchcache.EnvCacheTTL + "=" + r.opts.CacheTTL.String(),
		fetchcache.EnvDynamoDBEndpoint + "=" + r.Dynamo.URL(),
		"AWS_LAMBDA_FUNCTION_NAME=lambda-fetch-cache",
		"AWS_REGION=us-east-1",
		"AWS_ACCESS_KEY_ID=herdlock",
		"AWS_SECRET_ACCESS_KEY=herdlock",
		"AWS_EC2_METADATA_DISABLED=true",
	}, r.opts.Env...)
}

// Close stops the sandboxes, the upstream and the proxy. The DynamoDB
// server belongs to the caller.
func (r *Run) Close() {
	for _, p := range r.pools {
		p.Close()
	}
	for _, p := range r.procs {
		p.Close()
	}
	if r.Upstream != nil {
		r.Upstream.Close()
	}
	if r.Dynamo != nil {
		r.Dynamo.Close()
	}
}

// Payloads returns one event per pair.
func Payloads(pairs ...string) [][]byte {
	out := make([][]byte, len(pairs))
	for i, p := range pairs {
		out[i], _ = json.Marshal(fetchcache.Request{Pair: p})
	}
	return out
}

// Repeat returns n copies of s.
func Repeat(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}

// Decode reads the function's response from an invocation. It fails when
// the invocation could not be made, the function returned an error, or the
// answer is empty or not a Response with data.
func Decode(inv sandbox.Invocation) (fetchcache.Response, error) {
	var r fetchcache.Response
	switch {
	case inv.Err != nil:
		return r, inv.Err
	case inv.FunctionError:
		return r, fmt.Errorf("sandbox %d: function error (status %d): %s", inv.Sandbox, inv.Status, inv.Body)
	}
	if err := json.Unmarshal(inv.Body, &r); err != nil {
		return r, fmt.Errorf("sandbox %d: answer %q: %w", inv.Sandbox, inv.Body, err)
	}
	if len(r.Data) == 0 || string(r.Data) == "null" || r.Source == "" {
		return r, fmt.Errorf("sandbox %d: empty answer %s", inv.Sandbox, inv.Body)
	}
	return r, nil
}

func randomSuffix() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:]) + strconv.FormatInt(time.Now().UnixMilli()%1000, 10)
}
