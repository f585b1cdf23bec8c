package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"
)

// childEnv makes the test binary a Lambda function: TestMain runs
// aws-lambda-go's runtime loop with echoHandler instead of the tests.
const childEnv = "HERDLOCK_SANDBOX_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "echo" {
		lambda.Start(echoHandler)
		return
	}
	os.Exit(m.Run())
}

var active, peak atomic.Int32

// echo is echoHandler's answer: what the runtime client read from the
// headers, and how many invocations ran at once.
type echo struct {
	RequestID  string
	ARN        string
	TraceID    string
	DeadlineMs int64
	Peak       int32
	Event      json.RawMessage
}

// echoHandler holds each invocation until MaxConcurrency of them run at
// once (or a second passes), so that the answer shows the concurrency.
func echoHandler(ctx context.Context, ev json.RawMessage) (echo, error) {
	n := active.Add(1)
	defer active.Add(-1)
	for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
	}
	for end := time.Now().Add(time.Second); peak.Load() < int32(lambdacontext.MaxConcurrency()) && time.Now().Before(end); {
		time.Sleep(time.Millisecond)
	}
	lc, _ := lambdacontext.FromContext(ctx)
	dl, _ := ctx.Deadline()
	trace, _ := ctx.Value("x-amzn-trace-id").(string)
	switch string(ev) {
	case `"fail"`:
		return echo{}, fmt.Errorf("asked to fail")
	case `"panic"`:
		panic("asked to panic")
	case `"slow"`:
		time.Sleep(500 * time.Millisecond) // still running when the other panics
	}
	fmt.Println(`{"requestId":"` + lc.AwsRequestID + `"}`)
	return echo{RequestID: lc.AwsRequestID, ARN: lc.InvokedFunctionArn, TraceID: trace, DeadlineMs: dl.UnixMilli(), Peak: peak.Load(), Event: ev}, nil
}

// TestProcessConcurrency runs aws-lambda-go's runtime loop (the test binary
// itself) with AWS_LAMBDA_MAX_CONCURRENCY=4 against the runtime API: four
// loops wait, four invocations run at once, each sees its own request id,
// deadline, ARN and trace header, and an error reaches its invocation.
func TestProcessConcurrency(t *testing.T) {
	const n = 4
	p, err := StartProcess(t.Context(), ProcessConfig{
		Bootstrap:   os.Args[0],
		Args:        []string{"-test.run=^$"},
		Env:         []string{childEnv + "=echo"},
		Concurrency: n,
		Timeout:     20 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	payloads := [][]byte{[]byte(`1`), []byte(`2`), []byte(`3`), []byte(`"fail"`)}
	invs := p.Burst(ctx, payloads)
	for i, inv := range invs[:3] {
		var got echo
		if inv.Err != nil || inv.FunctionError || json.Unmarshal(inv.Body, &got) != nil {
			t.Fatalf("invocation %d: %+v (stderr %s)", i, inv, p.Stderr())
		}
		if got.RequestID != inv.RequestID || got.ARN != DefaultFunctionARN || got.TraceID == "" || string(got.Event) != string(payloads[i]) {
			t.Errorf("invocation %d (%s) answered %s", i, inv.RequestID, inv.Body)
		}
		if left := time.Until(time.UnixMilli(got.DeadlineMs)); left < 5*time.Second || left > 20*time.Second {
			t.Errorf("invocation %d: deadline %v ahead, want under the 20s timeout", i, left)
		}
		if got.Peak != n {
			t.Errorf("invocation %d: peak concurrency %d, want %d", i, got.Peak, n)
		}
	}
	if inv := invs[3]; !inv.FunctionError || inv.ErrorType == "" {
		t.Errorf("failing invocation: %+v, want a function error with its type", inv)
	}
	if s := p.API.Stats(); s.MaxInFlight != n {
		t.Errorf("Stats() = %+v, want %d in flight at most", s, n)
	}
	if lines := p.WaitLines(ctx, func(l []Line) bool { return len(l) >= 3 }); len(lines) != 3 {
		t.Errorf("stdout lines %v, want the 3 answers' lines", lines)
	}
}

// TestProcessPanic shows what aws-lambda-go does with a handler panic when
// it runs several invocations at once: the panicking invocation gets its
// error, the invocation running beside it still finishes and gets its
// answer, and then the process exits, taking no new invocation.
func TestProcessPanic(t *testing.T) {
	p, err := StartProcess(t.Context(), ProcessConfig{
		Bootstrap:   os.Args[0],
		Args:        []string{"-test.run=^$"},
		Env:         []string{childEnv + "=echo"},
		Concurrency: 2,
		Timeout:     20 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	invs := p.Burst(ctx, [][]byte{[]byte(`"slow"`), []byte(`"panic"`)})
	if inv := invs[0]; inv.Err != nil || inv.FunctionError {
		t.Errorf("invocation beside the panic: %+v, want its answer", inv)
	}
	if inv := invs[1]; !inv.FunctionError || !strings.Contains(string(inv.Body), "asked to panic") {
		t.Errorf("panicking invocation: %+v, want its panic as the error", inv)
	}
	inv := p.Invoke(ctx, []byte(`1`))
	if inv.Err == nil {
		t.Errorf("invocation after the panic: %+v, want none: the process exits", inv)
	}
	if exited, _ := p.Exited(); !exited {
		t.Error("the process did not exit after the panic")
	}
}
