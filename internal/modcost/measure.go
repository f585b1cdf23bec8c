package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

// root is the herdlock library module, whose folder is the repository root.
const root = "github.com/herdlock/herdlock"

// consumer is a user's module: the program testdata/<name>/main.go (or
// the README's quick-start) and the herdlock modules it requires, as
// folders relative to the repository root.
type consumer struct {
	name       string
	fromREADME bool // the program is the README's first Go block
	modules    []string
	// pins are the other modules it requires directly, with the go.mod
	// (relative to the repository root) whose version of each it takes,
	// so every consumer is measured on the versions herdlock is tested on.
	pins map[string]string
}

// sdkPins are the AWS modules every consumer requires, at the library's
// versions.
var sdkPins = map[string]string{
	"github.com/aws/aws-lambda-go":                  "go.mod",
	"github.com/aws/aws-sdk-go-v2/config":           "go.mod",
	"github.com/aws/aws-sdk-go-v2/service/dynamodb": "go.mod",
}

// consumers returns the measured programs, the baseline first.
func consumers() []consumer {
	otelPins := map[string]string{
		"go.opentelemetry.io/otel/sdk":                                    "examples/lambda-fetch-cache/go.mod",
		"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp": "examples/lambda-fetch-cache/go.mod",
	}
	for k, v := range sdkPins {
		otelPins[k] = v
	}
	s3Pins := map[string]string{"github.com/aws/aws-sdk-go-v2/service/s3": "middleware/lockmw/s3answers/go.mod"}
	for k, v := range sdkPins {
		s3Pins[k] = v
	}
	return []consumer{
		{name: "bare", pins: sdkPins},
		{name: "quickstart", fromREADME: true, modules: []string{"."}, pins: sdkPins},
		{name: "xray", modules: []string{".", "middleware/lockmw/xraytracer"}, pins: sdkPins},
		{name: "otel", modules: []string{".", "middleware/lockmw/oteltracer"}, pins: otelPins},
		{name: "s3answers", modules: []string{".", "middleware/lockmw/s3answers"}, pins: s3Pins},
	}
}

// figures is what one consumer costs.
type figures struct {
	Modules     int           // lines of go list -m all, the main module included
	SumLines    int           // lines of go.sum
	Sum         string        // go.sum's text
	BinaryBytes int64         // the stripped bootstrap; 0 when not built
	Init        time.Duration // the least of the initialisers' clock times; 0 when not run
}

// measure builds c in a module of its own under work and measures it;
// binary also builds and starts the bootstrap.
func measure(ctx context.Context, repo, work string, c consumer, binary bool) (figures, error) {
	dir := filepath.Join(work, c.name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return figures{}, err
	}
	src, err := source(repo, c)
	if err != nil {
		return figures{}, err
	}
	if err := os.WriteFile(filepath.Join(dir, "main.go"), src, 0o644); err != nil {
		return figures{}, err
	}
	mod, err := goMod(repo, c)
	if err != nil {
		return figures{}, err
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(mod), 0o644); err != nil {
		return figures{}, err
	}
	if _, err := goCmd(ctx, dir, nil, "mod", "tidy"); err != nil {
		return figures{}, err
	}
	list, err := goCmd(ctx, dir, nil, "list", "-m", "all")
	if err != nil {
		return figures{}, err
	}
	sum, err := os.ReadFile(filepath.Join(dir, "go.sum"))
	if err != nil && !os.IsNotExist(err) {
		return figures{}, err
	}
	f := figures{Modules: countLines(list), SumLines: countLines(sum), Sum: string(sum)}
	if !binary {
		return f, nil
	}
	out := filepath.Join(dir, "bootstrap")
	env := []string{"CGO_ENABLED=0", "GOOS=linux", "GOARCH=" + runtime.GOARCH}
	if _, err := goCmd(ctx, dir, env, "build", "-trimpath", "-tags", "lambda.norpc", "-ldflags=-s -w", "-o", out, "."); err != nil {
		return figures{}, err
	}
	st, err := os.Stat(out)
	if err != nil {
		return figures{}, err
	}
	f.BinaryBytes = st.Size()
	f.Init, err = initTime(ctx, out)
	return f, err
}

// source is c's program.
func source(repo string, c consumer) ([]byte, error) {
	if !c.fromREADME {
		return os.ReadFile(filepath.Join(repo, "internal", "modcost", "testdata", c.name, "main.go"))
	}
	readme, err := os.ReadFile(filepath.Join(repo, "README.md"))
	if err != nil {
		return nil, err
	}
	_, rest, ok := bytes.Cut(readme, []byte("\n```go\n"))
	if !ok {
		return nil, fmt.Errorf("modcost: README.md has no Go block")
	}
	block, _, ok := bytes.Cut(rest, []byte("\n```\n"))
	if !ok {
		return nil, fmt.Errorf("modcost: README.md's first Go block does not end")
	}
	return append(block, '\n'), nil
}

// goMod is c's go.mod: the herdlock modules replaced by their folders, the
// pinned modules at the versions their go.mod files give.
func goMod(repo string, c consumer) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "module example.com/%s\n\ngo 1.26.0\n\n", c.name)
	for _, m := range c.modules {
		path := modulePath(m)
		fmt.Fprintf(&b, "require %s v0.0.0-00010101000000-000000000000\nreplace %s => %s\n", path, path, filepath.Join(repo, m))
	}
	names := make([]string, 0, len(c.pins))
	for name := range c.pins {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		v, err := requiredVersion(filepath.Join(repo, c.pins[name]), name)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "require %s %s\n", name, v)
	}
	return b.String(), nil
}

// modulePath is the module path of the herdlock module in folder dir.
func modulePath(dir string) string {
	if dir == "." {
		return root
	}
	return root + "/" + dir
}

// requiredVersion is the version of module name that the go.mod file at
// path requires.
func requiredVersion(path, name string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	re := regexp.MustCompile(`(?m)^\s*(?:require\s+)?` + regexp.QuoteMeta(name) + `\s+(v\S+)`)
	m := re.FindSubmatch(b)
	if m == nil {
		return "", fmt.Errorf("modcost: %s requires no %s", path, name)
	}
	return string(m[1]), nil
}

// goCmd runs the go command in dir outside the repository's workspace.
func goCmd(ctx context.Context, dir string, env []string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod"), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("modcost: go %s in %s: %w\n%s", strings.Join(args, " "), dir, err, stderr.Bytes())
	}
	return out, nil
}

func countLines(b []byte) int { return bytes.Count(b, []byte("\n")) }

// initRuns is how many times initTime starts the bootstrap.
const initRuns = 7

// initTime starts the bootstrap initRuns times outside Lambda (it exits
// at once: no runtime API) and returns the least clock time its package
// initialisers report with GODEBUG=inittrace=1: the other work of a
// machine only adds to it.
func initTime(ctx context.Context, bin string) (time.Duration, error) {
	re := regexp.MustCompile(`^init \S+ @\S+ ms, ([0-9.]+) ms clock`)
	var runs []time.Duration
	for range initRuns {
		cmd := exec.CommandContext(ctx, bin)
		cmd.Env = []string{"GODEBUG=inittrace=1", "PATH=" + os.Getenv("PATH")}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		_ = cmd.Run() // it fails: there is no runtime API to talk to
		var total float64
		sc := bufio.NewScanner(&stderr)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				ms, err := strconv.ParseFloat(m[1], 64)
				if err != nil {
					return 0, err
				}
				total += ms
			}
		}
		runs = append(runs, time.Duration(total*float64(time.Millisecond)))
	}
	return slices.Min(runs), nil
}
