package sandbox

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"time"

	"github.com/herdlock/herdlock/internal/proc"
)

// ProcessConfig configures [StartProcess].
type ProcessConfig struct {
	// Bootstrap is the function's bootstrap binary, or any program that
	// runs aws-lambda-go's runtime loop. Required.
	Bootstrap string
	// Args are the program's arguments. Default none.
	Args []string
	// Env is the function's environment, KEY=VALUE. The process also gets
	// PATH, AWS_LAMBDA_RUNTIME_API, AWS_LAMBDA_MAX_CONCURRENCY and
	// AWS_LAMBDA_FUNCTION_TIMEOUT; nothing else of this process's
	// environment is passed on.
	Env []string
	// Concurrency is AWS_LAMBDA_MAX_CONCURRENCY: how many invocations the
	// process runs at once. Default 1.
	Concurrency int
	// Timeout is the function timeout of every invocation. Default 10s.
	Timeout time.Duration
	// FunctionARN is the invoked function ARN. Default
	// [DefaultFunctionARN].
	FunctionARN string
	// Output, when set, receives every line the process prints, prefixed
	// with "stdout" or "stderr".
	Output io.Writer
}

// Process is one execution environment of Lambda Managed Instances: the
// function as one process, running Concurrency invocations at once against
// its own [RuntimeAPI]. It is safe for concurrent use.
type Process struct {
	API *RuntimeAPI

	cmd     *exec.Cmd
	exited  chan struct{} // closed when the process has exited and its output is drained
	exitCtx context.Context
	waitErr error
	stderr  *proc.Tail

	mu       sync.Mutex // guards lines and errLines
	lines    []Line
	errLines []Line

	closeOnce sync.Once
}

// StartProcess starts the runtime API and the process, and returns once the
// process's Concurrency invocation loops all wait for an invocation. Close
// it when done.
func StartProcess(ctx context.Context, cfg ProcessConfig) (*Process, error) {
	if cfg.Bootstrap == "" {
		return nil, errors.New("sandbox: ProcessConfig.Bootstrap is required")
	}
	if cfg.Concurrency == 0 {
		cfg.Concurrency = 1
	}
	if cfg.Concurrency < 1 {
		return nil, fmt.Errorf("sandbox: concurrency %d", cfg.Concurrency)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 10 * time.Second
	}
	api, err := StartRuntimeAPI(RuntimeAPIConfig{Timeout: cfg.Timeout, FunctionARN: cfg.FunctionARN})
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(cfg.Bootstrap, cfg.Args...)
	cmd.Env = append([]string{
		"PATH=" + os.Getenv("PATH"),
		"AWS_LAMBDA_RUNTIME_API=" + api.Addr(),
		"AWS_LAMBDA_MAX_CONCURRENCY=" + strconv.Itoa(cfg.Concurrency),
		"AWS_LAMBDA_FUNCTION_TIMEOUT=" + strconv.Itoa(int((cfg.Timeout+time.Second-1)/time.Second)),
	}, cfg.Env...)
	proc.SetProcessGroup(cmd)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		api.Close()
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		api.Close()
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	exitCtx, exitCancel := context.WithCancelCause(context.Background())
	p := &Process{API: api, cmd: cmd, exited: make(chan struct{}), exitCtx: exitCtx, stderr: &proc.Tail{Max: 8 << 10}}
	if err := cmd.Start(); err != nil {
		exitCancel(err)
		api.Close()
		return nil, fmt.Errorf("sandbox: start %s: %w", cfg.Bootstrap, err)
	}
	go func() {
		var wg sync.WaitGroup
		wg.Go(func() { p.readLines(stdout, "stdout", nil, cfg.Output) })
		wg.Go(func() { p.readLines(stderr, "stderr", p.stderr, cfg.Output) })
		wg.Wait()
		p.waitErr = cmd.Wait()
		// exited first: whoever sees exitCtx end (an Invoke cut short by
		// the exit) must also see Exited report it.
		close(p.exited)
		exitCancel(fmt.Errorf("sandbox: the process exited: %v: %s", p.waitErr, p.stderr))
	}()
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	wctx, stop := mergeCancel(wctx, exitCtx)
	defer stop()
	if err := api.WaitForLoops(wctx, cfg.Concurrency); err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

// mergeCancel returns ctx, also cancelled (with other's cause) when other
// ends.
func mergeCancel(ctx, other context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(other, func() { cancel(context.Cause(other)) })
	return ctx, func() { stop(); cancel(nil) }
}

func (p *Process) readLines(r io.Reader, stream string, tail io.Writer, out io.Writer) {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		text, err := br.ReadString('\n')
		if text != "" {
			if tail != nil {
				_, _ = io.WriteString(tail, text)
			}
			text = trimEOL(text)
			p.mu.Lock()
			if stream == "stdout" {
				p.lines = append(p.lines, Line{At: time.Now(), Text: text})
			} else {
				p.errLines = append(p.errLines, Line{At: time.Now(), Text: text})
			}
			p.mu.Unlock()
			if out != nil {
				fmt.Fprintf(out, "[%s] %s\n", stream, text)
			}
		}
		if err != nil {
			return
		}
	}
}

func trimEOL(s string) string {
	for len(s) > 0 && (s[len(s)-1] == '\n' || s[len(s)-1] == '\r') {
		s = s[:len(s)-1]
	}
	return s
}

// Lines returns the lines the process printed on stdout so far.
func (p *Process) Lines() []Line {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Line(nil), p.lines...)
}

// WaitLines returns the stdout lines once done accepts them, or those
// printed when ctx ends or the process exits. An invocation's answer can
// reach the runtime API before the lines it printed reach this process
// through the pipe: wait for them with this.
func (p *Process) WaitLines(ctx context.Context, done func([]Line) bool) []Line {
	delay := time.Millisecond
	for {
		lines := p.Lines()
		if done(lines) || ctx.Err() != nil {
			return lines
		}
		select {
		case <-p.exited:
			return p.Lines()
		case <-ctx.Done():
		case <-time.After(delay):
		}
		delay = min(2*delay, 50*time.Millisecond)
	}
}

// StderrLines returns the lines the process printed on stderr so far.
func (p *Process) StderrLines() []Line {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Line(nil), p.errLines...)
}

// Stderr returns the tail of the process's stderr.
func (p *Process) Stderr() string { return p.stderr.String() }

// Exited reports whether the process has exited, and its exit error.
func (p *Process) Exited() (bool, error) {
	select {
	case <-p.exited:
		return true, p.waitErr
	default:
		return false, nil
	}
}

// Invoke sends one invocation with payload and waits for its answer. It
// ends early, with Err set, if the process exits.
func (p *Process) Invoke(ctx context.Context, payload []byte) Invocation {
	ctx, stop := mergeCancel(ctx, p.exitCtx)
	defer stop()
	return p.API.Invoke(ctx, payload)
}

// Burst sends every payload at once, each as its own invocation of the one
// process, and returns the invocations in payload order. Invocations beyond
// the process's concurrency wait for a free invocation loop.
func (p *Process) Burst(ctx context.Context, payloads [][]byte) []Invocation {
	out := make([]Invocation, len(payloads))
	var ready, done sync.WaitGroup
	ready.Add(len(payloads))
	start := make(chan struct{})
	for i, payload := range payloads {
		done.Go(func() {
			ready.Done()
			<-start
			out[i] = p.Invoke(ctx, payload)
			out[i].Sandbox = i
		})
	}
	ready.Wait()
	close(start)
	done.Wait()
	return out
}

// Close stops the process and the runtime API, and waits for the process.
func (p *Process) Close() error {
	p.closeOnce.Do(func() {
		proc.KillProcessGroup(p.cmd, p.exited)
		<-p.exited
		p.API.Close()
	})
	return nil
}
