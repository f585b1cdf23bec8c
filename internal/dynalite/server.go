// Package dynalite starts and stops a local dynalite server, the
// DynamoDB-compatible server that herdlock's tests, benchmarks and demo run
// against, and builds SDK clients for such local endpoints.
//
// dynalite is an npm package pinned in this folder's package.json and
// package-lock.json; `make deps` installs it (`npm ci --prefix
// internal/dynalite`). Known differences from DynamoDB that matter to
// herdlock: no ReturnValuesOnConditionCheckFailure (a failed conditional
// write returns no item), no TransactWriteItems and no UpdateTimeToLive.
package dynalite

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
	"strings"
	"sync"
	"time"

	"github.com/herdlock/herdlock/internal/proc"
)

// DirEnv names the environment variable that, when set, overrides the
// folder holding launch.js and node_modules/dynalite.
const DirEnv = "HERDLOCK_DYNALITE_DIR"

// InstallHint is the command that installs what Start needs.
const InstallHint = "make deps (runs: npm ci --prefix internal/dynalite)"

// startTimeout bounds Start when ctx has no earlier deadline.
const startTimeout = 30 * time.Second

// Server is a running dynalite process listening on a loopback port. Its
// tables live in memory and vanish when it stops.
//
// Server is safe for concurrent use.
type Server struct {
	endpoint string
	cmd      *exec.Cmd
	stdin    io.Closer     // closing it makes launch.js exit
	done     chan struct{} // closed when the process has been waited for
	waitErr  error         // set before done is closed
	stderr   *proc.Tail

	closeOnce sync.Once
	closeErr  error
}

// Start launches dynalite on a free 127.0.0.1 port with table creation,
// deletion and update delays of 0 ms, and returns once the server answers
// HTTP requests. ctx bounds the start only; stop the server with
// [Server.Close]. If Node.js or the npm packages are missing, the error says
// how to install them.
func Start(ctx context.Context) (*Server, error) {
	dir, err := Dir()
	if err != nil {
		return nil, err
	}
	node, err := exec.LookPath("node")
	if err != nil {
		return nil, fmt.Errorf("dynalite: node not found on PATH: install Node.js 20 or later, then run %s", InstallHint)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "dynalite", "package.json")); err != nil {
		return nil, fmt.Errorf("dynalite: npm packages missing in %s: run %s", dir, InstallHint)
	}

	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()

	cmd := exec.Command(node, "launch.js")
	cmd.Dir = dir
	cmd.Env = os.Environ()
	proc.SetProcessGroup(cmd)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("dynalite: %w", err)
	}
	addr := proc.NewFirstLine()
	cmd.Stdout = addr
	s := &Server{cmd: cmd, stdin: stdin, done: make(chan struct{}), stderr: &proc.Tail{Max: 8 << 10}}
	cmd.Stderr = s.stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("dynalite: start node: %w", err)
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
			return nil, fmt.Errorf("dynalite: unexpected launcher output %q", line)
		}
		s.endpoint = "http://" + net.JoinHostPort(a.Host, strconv.Itoa(a.Port))
	case <-s.done:
		return nil, fmt.Errorf("dynalite: exited before listening: %v: %s", s.waitErr, s.stderr)
	case <-ctx.Done():
		s.Close()
		return nil, fmt.Errorf("dynalite: waiting for the port: %w: %s", context.Cause(ctx), s.stderr)
	}

	if err := s.waitReady(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// waitReady polls the endpoint until it answers an HTTP request at all (an
// unsigned request gets a 4xx, which is an answer).
func (s *Server) waitReady(ctx context.Context) error {
	return proc.WaitAnswer(ctx, "dynalite", s.endpoint, func(ctx context.Context) (*http.Request, error) {
		return http.NewRequestWithContext(ctx, http.MethodPost, s.endpoint, strings.NewReader("{}"))
	}, s.done, func() string { return fmt.Sprintf("%v: %s", s.waitErr, s.stderr) })
}

// Endpoint returns the server's base URL, such as "http://127.0.0.1:41234".
func (s *Server) Endpoint() string { return s.endpoint }

// Close stops the server: it kills the process and its process group and
// waits for it to exit. Calling Close again returns the first result.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		s.stdin.Close()
		proc.KillProcessGroup(s.cmd, s.done)
		<-s.done
		var exit *exec.ExitError
		if s.waitErr != nil && !errors.As(s.waitErr, &exit) {
			s.closeErr = fmt.Errorf("dynalite: wait: %w", s.waitErr)
		}
	})
	return s.closeErr
}

// Dir returns the folder that holds launch.js and node_modules/dynalite:
// $HERDLOCK_DYNALITE_DIR when set, else this package's source folder when it
// exists on disk, else internal/dynalite under the first folder at or above
// the working directory that holds go.mod.
func Dir() (string, error) {
	_, file, _, _ := runtime.Caller(0)
	return proc.PackageDir("dynalite", DirEnv, filepath.Dir(file), "launch.js")
}

// PID returns the process id of the server's Node.js process.
func (s *Server) PID() int { return s.cmd.Process.Pid }
