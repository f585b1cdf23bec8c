// Package dynoxide starts and stops a local Dynoxide server, the
// DynamoDB-API server that herdlock's end-to-end tests, herd tests, chaos
// harness, benchmarks and demo run against. Build SDK clients for it with
// internal/dynalite's NewClient, which serves any local endpoint.
//
// Dynoxide is a static native binary, published as one npm package per
// platform and pinned in this folder's package.json and package-lock.json;
// `make deps` installs it (`npm ci --prefix internal/dynoxide`). Only
// linux/amd64 (@dynoxide/linux-x64) is pinned: the registry has no
// linux-arm64 package of the pinned version. The server keeps its tables in
// memory and answers a failed conditional write with the item when asked
// for ALL_OLD, as DynamoDB does (dynalite does not).
package dynoxide

import (
	"bytes"
	"context"
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
// folder holding package.json and node_modules/@dynoxide.
const DirEnv = "HERDLOCK_DYNOXIDE_DIR"

// InstallHint is the command that installs what Start needs.
const InstallHint = "make deps (runs: npm ci --prefix internal/dynoxide)"

// startTimeout bounds Start when ctx has no earlier deadline.
const startTimeout = 30 * time.Second

// portTries bounds how often Start picks another port when the one it
// picked was taken before the server could bind it.
const portTries = 5

// listeningPrefix starts the line the server writes to stderr once its
// listener is bound.
const listeningPrefix = "Dynoxide listening on "

// packages maps GOOS/GOARCH to the npm package pinned for that platform.
var packages = map[string]string{
	"linux/amd64": "@dynoxide/linux-x64",
}

// errPortTaken is a start that failed because the port was in use.
var errPortTaken = errors.New("dynoxide: port taken")

// Server is a running Dynoxide process listening on a loopback port. Its
// tables live in memory and vanish when it stops.
//
// Server is safe for concurrent use.
type Server struct {
	endpoint string
	cmd      *exec.Cmd
	done     chan struct{} // closed when the process has been waited for
	waitErr  error         // set before done is closed
	stderr   *proc.Tail

	closeOnce sync.Once
	closeErr  error
}

// Start launches Dynoxide on a free 127.0.0.1 port, in memory, and returns
// once the server answers HTTP requests. ctx bounds the start only; stop the
// server with [Server.Close]. If the pinned binary is missing, the error
// says how to install it. On Linux the server is killed when this process
// exits, however it exits.
func Start(ctx context.Context) (*Server, error) {
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	for try := 1; ; try++ {
		s, err := start(ctx, bin)
		if errors.Is(err, errPortTaken) && try < portTries {
			continue
		}
		return s, err
	}
}

// start runs bin on a port that was free a moment ago and waits until it
// answers. A port taken in between gives an error matching errPortTaken.
func start(ctx context.Context, bin string) (*Server, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "--host", "127.0.0.1", "--port", strconv.Itoa(port))
	proc.SetProcessGroup(cmd)
	proc.KillWithParent(cmd)
	s := &Server{
		endpoint: "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		cmd:      cmd,
		done:     make(chan struct{}),
		stderr:   &proc.Tail{Max: 8 << 10},
	}
	listening := &lineWatch{prefix: listeningPrefix, ch: make(chan struct{})}
	cmd.Stderr = io.MultiWriter(s.stderr, listening)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("dynoxide: start %s: %w", bin, err)
	}
	go func() {
		s.waitErr = cmd.Wait()
		close(s.done)
	}()

	select {
	case <-listening.ch:
	case <-s.done:
		tail := s.stderr.String()
		if strings.Contains(tail, "already in use") || strings.Contains(tail, "failed to bind") {
			return nil, fmt.Errorf("%w: %d: %s", errPortTaken, port, tail)
		}
		return nil, fmt.Errorf("dynoxide: exited before listening: %v: %s", s.waitErr, tail)
	case <-ctx.Done():
		s.Close()
		return nil, fmt.Errorf("dynoxide: waiting for port %d: %w: %s", port, context.Cause(ctx), s.stderr)
	}

	if err := s.waitReady(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// freePort returns a 127.0.0.1 TCP port that the kernel had free.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("dynoxide: pick a port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// waitReady polls the endpoint until it answers an HTTP request at all (the
// server answers GET / with its health line).
func (s *Server) waitReady(ctx context.Context) error {
	return proc.WaitAnswer(ctx, "dynoxide", s.endpoint, func(ctx context.Context) (*http.Request, error) {
		return http.NewRequestWithContext(ctx, http.MethodGet, s.endpoint, nil)
	}, s.done, func() string { return fmt.Sprintf("%v: %s", s.waitErr, s.stderr) })
}

// Endpoint returns the server's base URL, such as "http://127.0.0.1:41234".
func (s *Server) Endpoint() string { return s.endpoint }

// PID returns the process id of the server.
func (s *Server) PID() int { return s.cmd.Process.Pid }

// Close stops the server: it kills the process and its process group and
// waits for it to exit. Calling Close again returns the first result.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		proc.KillProcessGroup(s.cmd, s.done)
		<-s.done
		var exit *exec.ExitError
		if s.waitErr != nil && !errors.As(s.waitErr, &exit) {
			s.closeErr = fmt.Errorf("dynoxide: wait: %w", s.waitErr)
		}
	})
	return s.closeErr
}

// Binary returns the path of the pinned Dynoxide binary for this platform
// under [Dir], or an error naming the install command when it is missing.
func Binary() (string, error) {
	platform := runtime.GOOS + "/" + runtime.GOARCH
	pkg, ok := packages[platform]
	if !ok {
		return "", fmt.Errorf("dynoxide: no Dynoxide package is pinned for %s (internal/dynoxide/package.json pins @dynoxide/linux-x64 only)", platform)
	}
	dir, err := Dir()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "node_modules", filepath.FromSlash(pkg), "dynoxide")
	if _, err := os.Stat(bin); err != nil {
		return "", fmt.Errorf("dynoxide: %s missing in %s: run %s", pkg, dir, InstallHint)
	}
	return bin, nil
}

// Dir returns the folder that holds package.json and node_modules/@dynoxide:
// $HERDLOCK_DYNOXIDE_DIR when set, else this package's source folder when it
// exists on disk, else internal/dynoxide under the first folder at or above
// the working directory that holds go.mod.
func Dir() (string, error) {
	_, file, _, _ := runtime.Caller(0)
	return proc.PackageDir("dynoxide", DirEnv, filepath.Dir(file), "package.json")
}

// lineWatch is an io.Writer that closes ch once a complete line starting
// with prefix has been written to it, and discards everything.
type lineWatch struct {
	prefix string
	ch     chan struct{}

	mu   sync.Mutex // guards buf and seen
	buf  []byte
	seen bool
}

func (w *lineWatch) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.seen {
		return len(p), nil
	}
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		line := w.buf[:i]
		w.buf = w.buf[i+1:]
		if bytes.HasPrefix(line, []byte(w.prefix)) {
			w.seen, w.buf = true, nil
			close(w.ch)
			return len(p), nil
		}
	}
}
