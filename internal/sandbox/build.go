package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// BuildBootstrap builds the Lambda function in package pkg (an import path
// or a path relative to the working directory, inside the herdlock
// workspace) as a provided.al2023 bootstrap: GOOS=linux, CGO_ENABLED=0,
// -tags lambda.norpc plus tags, for goarch (runtime.GOARCH when empty, to
// run under the local emulator). It writes dir/bootstrap and returns its
// path. ctx bounds the build: give it no deadline shorter than a cold build
// from empty caches (a minute or more on two cores).
func BuildBootstrap(ctx context.Context, pkg, dir, goarch string, tags ...string) (string, error) {
	return BuildBootstrapProgress(ctx, nil, pkg, dir, goarch, tags...)
}

// progressEvery is how many compiled packages make one progress line.
const progressEvery = 20

// BuildBootstrapProgress is [BuildBootstrap] that reports its progress on
// progress (when not nil): a line every few packages the go command
// compiles, so a cold build is seen working, and the total at the end.
func BuildBootstrapProgress(ctx context.Context, progress io.Writer, pkg, dir, goarch string, tags ...string) (string, error) {
	if goarch == "" {
		goarch = runtime.GOARCH
	}
	out := filepath.Join(dir, "bootstrap")
	tagList := strings.Join(append([]string{"lambda.norpc"}, tags...), ",")
	cmd := exec.CommandContext(ctx, "go", "build", "-v", "-tags", tagList, "-trimpath", "-o", out, pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+goarch)
	// -v names each package as it is compiled, on stderr, mixed with any
	// compiler errors: count the names, keep everything for the error.
	pr, pw := io.Pipe()
	cmd.Stderr, cmd.Stdout = pw, pw
	var all bytes.Buffer
	counted := make(chan int)
	go func() {
		n := 0
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			all.Write(sc.Bytes())
			all.WriteByte('\n')
			n++
			if progress != nil && n%progressEvery == 0 {
				fmt.Fprintf(progress, "  ... %d packages compiled\n", n)
			}
		}
		_, _ = io.Copy(io.Discard, pr)
		counted <- n
	}()
	began := time.Now()
	err := cmd.Run()
	pw.Close()
	n := <-counted
	if err != nil {
		return "", fmt.Errorf("sandbox: go build %s: %w\n%s", pkg, err, all.Bytes())
	}
	if progress != nil {
		fmt.Fprintf(progress, "  built in %v (%d packages compiled; 0 means all were cached)\n", time.Since(began).Round(100*time.Millisecond), n)
	}
	return out, nil
}
