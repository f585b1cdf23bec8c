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
	// Bytes are the bootstrap sizes for the host's architecture (the
	// binaries run under the emulator) and for arm64 (as Lambda runs the
	// example).
	ExampleBytes      int64   `json:"exampleBootstrapBytes"`
	BareBytes         int64   `json:"bareBootstrapBytes"`
	ExampleArm64Bytes int64   `json:"exampleBootstrapArm64Bytes"`
	BareArm64Bytes    int64   `json:"bareBootstrapArm64Bytes"`
	Trials            int     `json:"trials"`
	ExampleInit       Summary `json:"exampleInitDuration"`
	BareInit          Summary `json:"bareInitDuration"`
	ExampleFirst      Summary `json:"exampleFirstInvoke"`
	BareFirst         Summary `json:"bareFirstInvoke"`
	InitRatio         float64 `json:"initRatioP50"`
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
	exBin, exSize, err1 := build(ExamplePackage, "example", "")
	bareBin, bareSize, err2 := build(BarePackage, "bare", "")
	_, exArm, err3 := build(ExamplePackage, "example", "arm64")
	_, bareArm, err4 := build(BarePackage, "bare", "arm64")
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		cs.Note = err.Error()
		return cs
	}
	cs.ExampleBytes, cs.BareBytes, cs.ExampleArm64Bytes, cs.BareArm64Bytes = exSize, bareSize, exArm, bareArm

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

	var exInit, bareInit, exFirst, bareFirst []float64
	for t := range trials {
		for _, which := range rand.Perm(2) {
			bin, fnEnv := exBin, exEnv
			if which == 1 {
				bin, fnEnv = bareBin, bareEnv
			}
			payload, _ := json.Marshal(fetchcache.Request{Pair: fmt.Sprintf("EUR-USD-%d", t)})
			initMs, firstMs, err := coldInvoke(ctx, rie, bin, fnEnv, payload)
			if err != nil {
				cs.Note = err.Error()
				return cs
			}
			if which == 0 {
				exInit, exFirst = append(exInit, initMs), append(exFirst, firstMs)
			} else {
				bareInit, bareFirst = append(bareInit, initMs), append(bareFirst, firstMs)
			}
		}
	}
	cs.Ran = true
	cs.ExampleInit, cs.BareInit = Summarize(exInit), Summarize(bareInit)
	cs.ExampleFirst, cs.BareFirst = Summarize(exFirst), Summarize(bareFirst)
	if cs.BareInit.P50 > 0 {
		cs.InitRatio = cs.ExampleInit.P50 / cs.BareInit.P50
	}
	return cs
}

// coldInvoke starts a fresh emulator with bin, invokes it once, and returns
// the Init Duration it reported and the client-side time of that first
// invocation.
func coldInvoke(ctx context.Context, rie, bin string, env []string, payload []byte) (initMs, firstMs float64, err error) {
	sb, err := sandbox.Start(ctx, 0, sandbox.Config{RIE: rie, Bootstrap: bin, Env: env, Timeout: 10 * time.Second})
	if err != nil {
		return 0, 0, err
	}
	defer sb.Close()
	inv := sb.Invoke(ctx, payload)
	if inv.Err != nil {
		return 0, 0, inv.Err
	}
	if inv.FunctionError {
		return 0, 0, fmt.Errorf("cold start: %s answered a function error: %s", filepath.Base(filepath.Dir(bin)), inv.Body)
	}
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		for _, l := range sb.Lines() {
			if m := initRE.FindStringSubmatch(l.Text); m != nil {
				v, err := strconv.ParseFloat(m[1], 64)
				return v, ms(inv.Latency()), err
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	return 0, 0, errors.New("cold start: the emulator printed no Init Duration")
}
