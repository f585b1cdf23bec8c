package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/herdlock/herdlock/examples/lambda-fetch-cache/fetchcache"
	"github.com/herdlock/herdlock/internal/sandbox"
)

// The packages of the cold-start figure.
const (
	ExamplePackage = "github.com/herdlock/herdlock/examples/lambda-fetch-cache"
	BarePackage    = "github.com/herdlock/herdlock/internal/bench/cmd/barelambda"
)

// ColdStart is figure 5.
type ColdStart struct {
	Ran  bool   `json:"ran"`
	Note string `json:"note,omitempty"`
	// Arch is the architecture the bootstraps were built for: the
	// host's, so that they run under the emulator.
	Arch         string `json:"arch"`
	ExampleBytes int64  `json:"exampleBootstrapBytes"`
	BareBytes    int64  `json:"bareBootstrapBytes"`
	Trials       int    `json:"trials"`
	// First and Second are the client-side times of the first invocation
	// of a fresh emulator (which starts the bootstrap: process start, Go
	// runtime and main's init, then the handler) and of the second (the
	// handler alone, on the same path with another key). Init is First -
	// Second per start: the init time.
	ExampleFirst  Summary `json:"exampleFirstInvoke"`
	ExampleSecond Summary `json:"exampleSecondInvoke"`
	ExampleInit   Summary `json:"exampleInit"`
	BareFirst     Summary `json:"bareFirstInvoke"`
	BareSecond    Summary `json:"bareSecondInvoke"`
	BareInit      Summary `json:"bareInit"`
	// RIEInit is the Init Duration the emulator prints. It does not wait
	// for the runtime's first request for an event, so it is near zero
	// and is not the init time; it is kept for reference.
	ExampleRIEInit Summary `json:"exampleRIEInitDuration"`
	BareRIEInit    Summary `json:"bareRIEInitDuration"`
	// InitRatio is the p50 of the example's init over the bare
	// handler's.
	InitRatio float64 `json:"initRatioP50"`
}

var initRE = regexp.MustCompile(`Init Duration: ([0-9.]+) ms`)

// RunColdStart builds both bootstraps into dir and starts each trials
// times in a fresh emulator (alternating, in a random order per trial),
// reading the emulator's Init Duration of the first invocation.
func RunColdStart(ctx context.Context, env *Env, dir string, trials int) ColdStart {
	cs := ColdStart{Trials: trials}
	rie, err := sandbox.RIEPath()
	if err != nil {
		cs.Note = err.Error()
		return cs
	}
	build := func(pkg, name, arch string) (string, int64, error) {
		d := filepath.Join(dir, name+"-"+arch)
		if err := os.MkdirAll(d, 0o755); err != nil {
			return "", 0, err
		}
		p, err := sandbox.BuildBootstrap(ctx, pkg, d, arch)
		if err != nil {
			return "", 0, err
		}
		fi, err := os.Stat(p)
		if err != nil {
			return "", 0, err
		}
		return p, fi.Size(), nil
	}
	cs.Arch = runtime.GOARCH
	exBin, exSize, err1 := build(ExamplePackage, "example", cs.Arch)
	bareBin, bareSize, err2 := build(BarePackage, "bare", cs.Arch)
	if err := errors.Join(err1, err2); err != nil {
		cs.Note = err.Error()
		return cs
	}
	cs.ExampleBytes, cs.BareBytes = exSize, bareSize

	cacheTable := "bench-cache"
	var inUse *types.ResourceInUseException
	if err := fetchcache.CreateCacheTable(ctx, env.Client, cacheTable); err != nil && !errors.As(err, &inUse) {
		cs.Note = err.Error()
		return cs
	}
	up := sandbox.StartUpstream(sandbox.UpstreamConfig{})
	defer up.Close()
	exEnv := []string{
		fetchcache.EnvLockTable + "=" + LockTable,
		fetchcache.EnvCacheTable + "=" + cacheTable,
		fetchcache.EnvUpstreamURL + "=" + up.URL(),
		fetchcache.EnvServiceName + "=lambda-fetch-cache",
		fetchcache.EnvMetricsNamespace + "=herdlock-bench",
		fetchcache.EnvLambdaLogLevel + "=ERROR",
		fetchcache.EnvDynamoDBEndpoint + "=" + env.Server.Endpoint(),
		"AWS_LAMBDA_FUNCTION_NAME=lambda-fetch-cache",
		"AWS_REGION=us-east-1",
		"AWS_ACCESS_KEY_ID=herdlock",
		"AWS_SECRET_ACCESS_KEY=herdlock",
		"AWS_EC2_METADATA_DISABLED=true",
	}
	bareEnv := []string{"AWS_LAMBDA_FUNCTION_NAME=bare", "AWS_REGION=us-east-1"}

	var ex, bare [4][]float64 // first, second, init, RIE init
	for t := range trials {
		for _, which := range rand.Perm(2) {
			bin, fnEnv, into := exBin, exEnv, &ex
			if which == 1 {
				bin, fnEnv, into = bareBin, bareEnv, &bare
			}
			c, err := coldInvoke(ctx, rie, bin, fnEnv, t)
			if err != nil {
				cs.Note = err.Error()
				return cs
			}
			into[0] = append(into[0], c.first)
			into[1] = append(into[1], c.second)
			into[2] = append(into[2], c.first-c.second)
			into[3] = append(into[3], c.rieInit)
		}
	}
	cs.Ran = true
	cs.ExampleFirst, cs.ExampleSecond, cs.ExampleInit, cs.ExampleRIEInit = Summarize(ex[0]), Summarize(ex[1]), Summarize(ex[2]), Summarize(ex[3])
	cs.BareFirst, cs.BareSecond, cs.BareInit, cs.BareRIEInit = Summarize(bare[0]), Summarize(bare[1]), Summarize(bare[2]), Summarize(bare[3])
	if cs.BareInit.P50 > 0 {
		cs.InitRatio = cs.ExampleInit.P50 / cs.BareInit.P50
	}
	return cs
}

type coldTimes struct{ first, second, rieInit float64 }

// coldInvoke starts a fresh emulator with bin and invokes it twice, with
// two keys that neither invocation has seen, and returns the client-side
// times of both invocations and the Init Duration the emulator printed.
func coldInvoke(ctx context.Context, rie, bin string, env []string, trial int) (coldTimes, error) {
	var c coldTimes
	sb, err := sandbox.Start(ctx, 0, sandbox.Config{RIE: rie, Bootstrap: bin, Env: env, Timeout: 10 * time.Second})
	if err != nil {
		return c, err
	}
	defer sb.Close()
	for i, dst := range []*float64{&c.first, &c.second} {
		payload, _ := json.Marshal(fetchcache.Request{Pair: fmt.Sprintf("COLD-%d-%d-%d", time.Now().UnixNano(), trial, i)})
		inv := sb.Invoke(ctx, payload)
		if inv.Err != nil {
			return c, inv.Err
		}
		if inv.FunctionError {
			return c, fmt.Errorf("cold start: %s answered a function error: %s", filepath.Base(filepath.Dir(bin)), inv.Body)
		}
		*dst = ms(inv.Latency())
	}
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		for _, l := range sb.Lines() {
			if m := initRE.FindStringSubmatch(l.Text); m != nil {
				c.rieInit, err = strconv.ParseFloat(m[1], 64)
				return c, err
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	return c, errors.New("cold start: the emulator printed no Init Duration")
}
