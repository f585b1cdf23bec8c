package sandbox

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
)

// BuildBootstrap builds the Lambda function in package pkg (an import path
// or a path relative to the working directory, inside the herdlock module)
// as a provided.al2023 bootstrap: GOOS=linux, CGO_ENABLED=0, -tags
// lambda.norpc, for goarch (runtime.GOARCH when empty, to run under the
// local emulator). It writes dir/bootstrap and returns its path.
func BuildBootstrap(ctx context.Context, pkg, dir, goarch string) (string, error) {
	if goarch == "" {
		goarch = runtime.GOARCH
	}
	out := filepath.Join(dir, "bootstrap")
	cmd := exec.CommandContext(ctx, "go", "build", "-tags", "lambda.norpc", "-trimpath", "-o", out, pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+goarch)
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("sandbox: go build %s: %w\n%s", pkg, err, b)
	}
	return out, nil
}
