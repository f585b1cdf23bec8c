package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/herdlock/herdlock/internal/proc"
)

// RIEEnv names the environment variable holding the emulator's path.
const RIEEnv = "HERDLOCK_RIE"

// RIEPath returns the path of the aws-lambda-rie binary: $HERDLOCK_RIE, or
// when that is unset, bin/aws-lambda-rie in the first folder at or above the
// working directory that holds go.mod (where make deps builds it). When
// there is no binary, the error says to run make deps.
func RIEPath() (string, error) {
	p := os.Getenv(RIEEnv)
	if p == "" {
		p = defaultRIE()
	}
	if p == "" {
		return "", fmt.Errorf("sandbox: %s is not set and bin/aws-lambda-rie was not found: run make deps (it builds bin/aws-lambda-rie), or set %s to an aws-lambda-rie binary", RIEEnv, RIEEnv)
	}
	if fi, err := os.Stat(p); err != nil || fi.IsDir() {
		return "", fmt.Errorf("sandbox: no aws-lambda-rie binary at %s=%s: run make deps", RIEEnv, p)
	}
	return p, nil
}

// Config configures the sandboxes of [Start] and [StartPool].
type Config struct {
	// RIE is the path of the aws-lambda-rie binary. Required.
	RIE string
	// Bootstrap is the function's bootstrap binary. Required.
	Bootstrap string
	// Env is the function's environment, KEY=VALUE. The sandbox adds
	// AWS_LAMBDA_FUNCTION_TIMEOUT and PATH; nothing else of this process's
	// environment is passed on.
	Env []string
	// Timeout is the function timeout, in whole seconds, at least one.
	// Default 10s.
	Timeout time.Duration
	// Output, when set, receives every line the emulator prints on stdout,
	// prefixed with the sandbox number.
	Output io.Writer
}

// Line is one line the emulator printed on stdout: the function's output
// (stdout and stderr) among the emulator's START, END and REPORT lines.
type Line struct {
	Sandbox int
	At      time.Time
	Text    string
}

// IsRuntimeLine reports whether text is one of the emulator's own lines,
// or the line aws-lambda-go logs (standard log, on stderr, which the
// emulator merges) with the error document of a function error, rather
// than the function's output.
func IsRuntimeLine(text string) bool {
	for _, p := range []string{"START RequestId: ", "END RequestId: ", "REPORT RequestId: "} {
		if strings.HasPrefix(text, p) {
			return true
		}
	}
	return isErrorReportLine(text)
}

// isErrorReportLine reports whether text is "YYYY/MM/DD hh:mm:ss " and a
// JSON object with errorMessage and errorType: aws-lambda-go's
// log.Printf of the error it reports to the runtime.
func isErrorReportLine(text string) bool {
	const stamp = "2006/01/02 15:04:05 "
	if len(text) <= len(stamp) {
		return false
	}
	if _, err := time.Parse(stamp, text[:len(stamp)]); err != nil {
		return false
	}
	var doc struct {
		Message *string `json:"errorMessage"`
		Type    *string `json:"errorType"`
	}
	return json.Unmarshal([]byte(text[len(stamp):]), &doc) == nil && doc.Message != nil && doc.Type != nil
}

// Sandbox is one aws-lambda-rie process running the bootstrap: one Lambda
// execution environment, which takes one invocation at a time. Invoke
// refuses a second concurrent invocation rather than crash the emulator.
// It is safe for concurrent use.
type Sandbox struct {
	ID      int
	invoke  string // invocation URL
	cmd     *exec.Cmd
	done    chan struct{} // closed when the process has exited and stdout is drained
	waitErr error
	stderr  *proc.Tail
	busy    atomic.Bool
	client  *http.Client
	ports   []int // the emulator's two ports, handed back at Close

	mu    sync.Mutex // guards lines
	lines []Line

	closeOnce sync.Once
}

// Invocation is the result of one [Sandbox.Invoke].
type Invocation struct {
	Sandbox int
	// RequestID is the invocation's request id, when a [RuntimeAPI]
	// served it.
	RequestID string
	Payload   []byte
	Start     time.Time
	End       time.Time
	Status    int
	Body      []byte
	// FunctionError is true when the function returned an error (the body
	// is then Lambda's error document) or timed out.
	FunctionError bool
	// ErrorType is the function's error type, when a [RuntimeAPI] served
	// an error.
	ErrorType string
	// Err is set when the invocation could not be made at all.
	Err error
}

// Latency returns End - Start.
func (inv Invocation) Latency() time.Duration { return inv.End.Sub(inv.Start) }

// Start starts one sandbox numbered id on two free loopback ports and
// returns when its invocation endpoint answers. The function itself starts
// (init) on the first invocation, as the emulator does. Close it when done.
func Start(ctx context.Context, id int, cfg Config) (*Sandbox, error) {
	if cfg.RIE == "" || cfg.Bootstrap == "" {
		return nil, errors.New("sandbox: Config.RIE and Config.Bootstrap are required")
	}
	timeout := cfg.Timeout
	if timeout == 0 {
		timeout = 10 * time.Second
	}
	if timeout < time.Second || timeout%time.Second != 0 {
		return nil, fmt.Errorf("sandbox: timeout must be whole seconds, at least 1s, got %v", timeout)
	}
	var lastErr error
	for range 3 { // a port taken between picking and binding: try new ones
		s, err := start(ctx, id, cfg, timeout)
		if err == nil {
			return s, nil
		}
		lastErr = err
		if ctx.Err() != nil {
			break
		}
	}
	return nil, lastErr
}

func start(ctx context.Context, id int, cfg Config, timeout time.Duration) (*Sandbox, error) {
	ports, err := freePorts(2)
	if err != nil {
		return nil, err
	}
	started := false
	defer func() {
		if !started {
			unreserve(ports)
		}
	}()
	rieAddr := "127.0.0.1:" + strconv.Itoa(ports[0])
	apiAddr := "127.0.0.1:" + strconv.Itoa(ports[1])
	cmd := exec.Command(cfg.RIE,
		"--runtime-interface-emulator-address", rieAddr,
		"--runtime-api-address", apiAddr,
		"--log-level", "error",
		cfg.Bootstrap)
	cmd.Env = append([]string{
		"PATH=" + os.Getenv("PATH"),
		"AWS_LAMBDA_FUNCTION_TIMEOUT=" + strconv.Itoa(int(timeout/time.Second)),
	}, cfg.Env...)
	proc.SetProcessGroup(cmd)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("sandbox %d: %w", id, err)
	}
	s := &Sandbox{
		ID:     id,
		invoke: "http://" + rieAddr + "/2015-03-31/functions/function/invocations",
		cmd:    cmd,
		done:   make(chan struct{}),
		stderr: &proc.Tail{Max: 8 << 10},
		client: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}},
	}
	cmd.Stderr = s.stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("sandbox %d: start %s: %w", id, cfg.RIE, err)
	}
	go func() {
		s.readLines(stdout, cfg.Output)
		s.waitErr = cmd.Wait()
		close(s.done)
	}()
	if err := s.waitListening(ctx, rieAddr); err != nil {
		s.Close()
		return nil, err
	}
	if owned, known := listenerOwner(cmd.Process.Pid, ports[0]); known && !owned {
		s.Close()
		return nil, fmt.Errorf("sandbox %d: %s is another process's listener: the port was taken before the emulator bound it", id, rieAddr)
	}
	s.ports = ports
	started = true
	return s, nil
}

// waitListening polls the emulator's address until it accepts a TCP
// connection, the process exits, or ctx ends.
func (s *Sandbox) waitListening(ctx context.Context, addr string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	delay := 2 * time.Millisecond
	var d net.Dialer
	for {
		c, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			c.Close()
			return nil
		}
		t := time.NewTimer(delay)
		select {
		case <-s.done:
			t.Stop()
			return fmt.Errorf("sandbox %d: emulator exited: %v: %s", s.ID, s.waitErr, s.stderr)
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("sandbox %d: emulator not listening on %s: %w: %s", s.ID, addr, context.Cause(ctx), s.stderr)
		case <-t.C:
		}
		delay = min(2*delay, 100*time.Millisecond)
	}
}

func (s *Sandbox) readLines(r io.Reader, out io.Writer) {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		text, err := br.ReadString('\n')
		if text != "" {
			text = strings.TrimRight(text, "\r\n")
			s.mu.Lock()
			s.lines = append(s.lines, Line{Sandbox: s.ID, At: time.Now(), Text: text})
			s.mu.Unlock()
			if out != nil {
				fmt.Fprintf(out, "[sandbox %d] %s\n", s.ID, text)
			}
		}
		if err != nil {
			return
		}
	}
}

// Lines returns the stdout lines printed so far.
func (s *Sandbox) Lines() []Line {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Line(nil), s.lines...)
}

// Invoke sends one invocation with payload and waits for its answer. It
// returns an Invocation with Err set, without sending anything, when
// another invocation of this sandbox is still running.
func (s *Sandbox) Invoke(ctx context.Context, payload []byte) (inv Invocation) {
	inv = Invocation{Sandbox: s.ID, Payload: payload, Start: time.Now()}
	defer func() { inv.End = time.Now() }()
	if !s.busy.CompareAndSwap(false, true) {
		inv.Err = fmt.Errorf("sandbox %d: busy: one invocation at a time", s.ID)
		return inv
	}
	defer s.busy.Store(false)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.invoke, bytes.NewReader(payload))
	if err != nil {
		inv.Err = fmt.Errorf("sandbox %d: %w", s.ID, err)
		return inv
	}
	resp, err := s.client.Do(req)
	if err != nil {
		inv.Err = fmt.Errorf("sandbox %d: invoke: %w: %s", s.ID, err, s.stderr)
		return inv
	}
	defer resp.Body.Close()
	inv.Body, err = io.ReadAll(resp.Body)
	if err != nil {
		inv.Err = fmt.Errorf("sandbox %d: reading the answer: %w", s.ID, err)
		return inv
	}
	inv.Status = resp.StatusCode
	inv.FunctionError = resp.StatusCode != http.StatusOK ||
		resp.Header.Get("X-Amz-Function-Error") != "" ||
		bytes.HasPrefix(inv.Body, []byte("Task timed out")) ||
		isErrorDocument(inv.Body)
	return inv
}

// isErrorDocument reports whether body is Lambda's function error document,
// {"errorMessage": ..., "errorType": ...}.
func isErrorDocument(body []byte) bool {
	return bytes.Contains(body, []byte(`"errorMessage"`)) && bytes.Contains(body, []byte(`"errorType"`))
}

// Close stops the emulator and the function it started, and waits for them.
func (s *Sandbox) Close() error {
	s.closeOnce.Do(func() {
		proc.KillProcessGroup(s.cmd, s.done)
		<-s.done
		unreserve(s.ports)
	})
	return nil
}

// freePorts returns n ports that were free on 127.0.0.1 a moment ago,
// below Linux's default ephemeral range (32768-60999): a port picked by
// binding port 0 comes from that range, where the machine's own outgoing
// loopback connections (the tests' DynamoDB clients, a chaos storm) take
// their source ports too, and one of them could hold it by the time the
// emulator binds it; the emulator then exits while the dial that waits
// for it reaches the other socket.
func freePorts(n int) ([]int, error) {
	const lo, hi = 20000, 32000
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for tries := 0; len(ports) < n; tries++ {
		if tries == 200 {
			return nil, fmt.Errorf("sandbox: no free port in %d-%d after %d tries", lo, hi, tries)
		}
		port := lo + rand.IntN(hi-lo)
		if !reserve(port) {
			continue // another sandbox of this process has it
		}
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			unreserve([]int{port})
			continue // taken: try another
		}
		ls = append(ls, l)
		ports = append(ports, port)
	}
	return ports, nil
}

func defaultRIE() string {
	wd, err := os.Getwd()
	if err != nil {
		return ""
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			p := filepath.Join(d, "bin", "aws-lambda-rie")
			if _, err := os.Stat(p); err == nil {
				return p
			}
		}
		if filepath.Dir(d) == d {
			return ""
		}
	}
}
