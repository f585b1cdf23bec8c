// Package s3rver starts and stops a local s3rver server, the
// S3-compatible server that the s3answers module's tests run against, and
// builds SDK clients for it.
//
// s3rver is an npm package pinned in this folder's package.json and
// package-lock.json; `make deps` installs it (`npm ci --prefix
// middleware/lockmw/s3answers/internal/s3rver`). It keeps objects in a
// folder of its own, removed by [Server.Close]. Known differences from S3
// that matter here: it signs nothing and checks no permission (no
// AccessDenied), and it answers path-style requests only.
package s3rver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/herdlock/herdlock/internal/proc"
)

// DirEnv names the environment variable that, when set, overrides the
// folder holding launch.js and node_modules/s3rver.
const DirEnv = "HERDLOCK_S3RVER_DIR"

// InstallHint is the command that installs what Start needs.
const InstallHint = "make deps (runs: npm ci --prefix middleware/lockmw/s3answers/internal/s3rver)"

// startTimeout bounds Start when ctx has no earlier deadline.
const startTimeout = 30 * time.Second

// Server is a running s3rver process listening on a loopback port.
//
// Server is safe for concurrent use.
type Server struct {
	endpoint string
	data     string // the objects' folder, removed by Close
	cmd      *exec.Cmd
	stdin    io.Closer     // closing it makes launch.js exit
	done     chan struct{} // closed when the process has been waited for
	waitErr  error         // set before done is closed
	stderr   *proc.Tail

	closeOnce sync.Once
	closeErr  error
}

// Start launches s3rver on a free 127.0.0.1 port with the given buckets
// created, and returns once the server answers HTTP requests. ctx bounds
// the start only; stop the server with [Server.Close]. If Node.js or the
// npm packages are missing, the error says how to install them.
func Start(ctx context.Context, buckets ...string) (*Server, error) {
	dir, err := Dir()
	if err != nil {
		return nil, err
	}
	node, err := exec.LookPath("node")
	if err != nil {
		return nil, fmt.Errorf("s3rver: node not found on PATH: install Node.js 20 or later, then run %s", InstallHint)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "s3rver", "package.json")); err != nil {
		return nil, fmt.Errorf("s3rver: npm packages missing in %s: run %s", dir, InstallHint)
	}
	data, err := os.MkdirTemp("", "herdlock-s3rver-")
	if err != nil {
		return nil, fmt.Errorf("s3rver: %w", err)
	}

	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()

	cmd := exec.Command(node, append([]string{"launch.js", data}, buckets...)...)
	cmd.Dir = dir
	cmd.Env = os.Environ()
	proc.SetProcessGroup(cmd)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		os.RemoveAll(data)
		return nil, fmt.Errorf("s3rver: %w", err)
	}
	addr := proc.NewFirstLine()
	cmd.Stdout = addr
	s := &Server{data: data, cmd: cmd, stdin: stdin, done: make(chan struct{}), stderr: &proc.Tail{Max: 8 << 10}}
	cmd.Stderr = s.stderr
	if err := cmd.Start(); err != nil {
		os.RemoveAll(data)
		return nil, fmt.Errorf("s3rver: start node: %w", err)
	}
	go func() {
		s.waitErr = cmd.Wait()
		close(s.done)
	}()

	select {
	case line := <-addr.C:
		var a struct {
			Host string `json:"host"`
			Port int    `json:"port"`
		}
		if err := json.Unmarshal([]byte(line), &a); err != nil || a.Port == 0 {
			s.Close()
			return nil, fmt.Errorf("s3rver: unexpected launcher output %q", line)
		}
		s.endpoint = "http://" + net.JoinHostPort(a.Host, strconv.Itoa(a.Port))
	case <-s.done:
		s.Close()
		return nil, fmt.Errorf("s3rver: exited before listening: %v: %s", s.waitErr, s.stderr)
	case <-ctx.Done():
		s.Close()
		return nil, fmt.Errorf("s3rver: waiting for the port: %w: %s", context.Cause(ctx), s.stderr)
	}

	err = proc.WaitAnswer(ctx, "s3rver", s.endpoint, func(ctx context.Context) (*http.Request, error) {
		return http.NewRequestWithContext(ctx, http.MethodGet, s.endpoint, nil)
	}, s.done, func() string { return fmt.Sprintf("%v: %s", s.waitErr, s.stderr) })
	if err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// Endpoint returns the server's base URL, such as "http://127.0.0.1:41234".
func (s *Server) Endpoint() string { return s.endpoint }

// Close stops the server: it kills the process and its process group,
// waits for it to exit and removes the objects' folder. Calling Close
// again returns the first result.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		s.stdin.Close()
		proc.KillProcessGroup(s.cmd, s.done)
		<-s.done
		var exit *exec.ExitError
		if s.waitErr != nil && !errors.As(s.waitErr, &exit) {
			s.closeErr = fmt.Errorf("s3rver: wait: %w", s.waitErr)
		}
		if err := os.RemoveAll(s.data); err != nil && s.closeErr == nil {
			s.closeErr = fmt.Errorf("s3rver: %w", err)
		}
	})
	return s.closeErr
}

// NewClient returns an S3 client for a local S3-API server at endpoint:
// static dummy credentials, region us-east-1, path-style requests, and
// the SDK's default retryer and checksum settings, as a Lambda function's
// client has them. optFns adjust the options afterwards.
func NewClient(endpoint string, optFns ...func(*s3.Options)) *s3.Client {
	opts := s3.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(endpoint),
		Credentials:  credentials.NewStaticCredentialsProvider("S3RVER", "S3RVER", ""),
		UsePathStyle: true,
	}
	for _, fn := range optFns {
		fn(&opts)
	}
	return s3.New(opts)
}

// Dir returns the folder that holds launch.js and node_modules/s3rver:
// $HERDLOCK_S3RVER_DIR when set, else this package's source folder when it
// exists on disk, else internal/s3rver under the first folder at or above
// the working directory that holds go.mod.
func Dir() (string, error) {
	_, file, _, _ := runtime.Caller(0)
	return proc.PackageDir("s3rver", DirEnv, filepath.Dir(file), "launch.js")
}
