package xraytracer_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/herdlock/herdlock/internal/dynalite"
	"github.com/herdlock/herdlock/internal/dynoxide/dynoxidetest"
	"github.com/herdlock/herdlock/lockcore"
)

// procSegment is the part of an X-Ray (sub)segment document the process test reads.
type procSegment struct {
	Name        string         `json:"name"`
	TraceID     string         `json:"trace_id"`
	Type        string         `json:"type"`
	Annotations map[string]any `json:"annotations"`
	Subsegments []procSegment  `json:"subsegments"`
	Fault       bool           `json:"fault"`
	Error       bool           `json:"error"`
}

func (s procSegment) walk(f func(procSegment)) {
	f(s)
	for _, c := range s.Subsegments {
		c.walk(f)
	}
}

// TestProcessStdoutAndTrace runs invocations in a child process with
// Lambda's environment and checks that its stdout holds only EMF documents
// and that the X-Ray subsegments reach a daemon listening on
// AWS_XRAY_DAEMON_ADDRESS.
func TestProcessStdoutAndTrace(t *testing.T) {
	srv := dynoxidetest.Start(t)
	if err := lockcore.CreateTable(t.Context(), dynalite.NewClient(srv.Endpoint()), "locks"); err != nil {
		t.Fatalf("CreateTable() = %v", err)
	}
	daemon, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("ListenPacket() = %v", err)
	}
	defer daemon.Close()

	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(),
		childEnv+"=1",
		childEndpointEnv+"="+srv.Endpoint(),
		"AWS_LAMBDA_FUNCTION_NAME=fx-rates",
		"AWS_LAMBDA_LOG_LEVEL=DEBUG", // X-Ray's debug log must go to stderr too
		"AWS_XRAY_DAEMON_ADDRESS="+daemon.LocalAddr().String(),
		"AWS_XRAY_CONTEXT_MISSING=",
		"POWERTOOLS_METRICS_NAMESPACE=herdlock-child",
		"POWERTOOLS_SERVICE_NAME=",
	)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("child: %v\nstderr:\n%s", err, stderr.String())
	}

	lines := strings.Split(strings.TrimRight(stdout.String(), "\n"), "\n")
	var coldStarts, invocations int
	for _, line := range lines {
		var doc map[string]any
		if err := json.Unmarshal([]byte(line), &doc); err != nil {
			t.Fatalf("stdout line is not JSON: %q\nstdout:\n%s", line, stdout.String())
		}
		aws, ok := doc["_aws"].(map[string]any)
		if !ok || aws["CloudWatchMetrics"] == nil {
			t.Fatalf("stdout line is not an EMF document: %q", line)
		}
		switch {
		case doc["ColdStart"] != nil:
			coldStarts++
		case doc["lockId"] != nil:
			invocations++
			if doc["service"] != "fx-rates" {
				t.Errorf("service dimension = %v, want the function name", doc["service"])
			}
		}
	}
	if coldStarts != 1 || invocations != 3 {
		t.Errorf("stdout has %d cold-start and %d invocation documents, want 1 and 3:\n%s", coldStarts, invocations, stdout.String())
	}
	if !strings.Contains(stderr.String(), `"component":"xray"`) {
		t.Errorf("stderr has no X-Ray log line; was X-Ray's log routed?\n%s", stderr.String())
	}

	// The child has exited, so every datagram it sent is queued on the
	// socket: read until the queue is empty.
	var segs []procSegment
	buf := make([]byte, 64<<10)
	for {
		if err := daemon.SetReadDeadline(time.Now().Add(500 * time.Millisecond)); err != nil {
			t.Fatal(err)
		}
		n, _, err := daemon.ReadFrom(buf)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			break
		}
		if err != nil {
			t.Fatalf("ReadFrom() = %v", err)
		}
		_, body, ok := bytes.Cut(buf[:n], []byte("\n"))
		if !ok {
			t.Fatalf("datagram without header: %q", buf[:n])
		}
		var s procSegment
		if err := json.Unmarshal(body, &s); err != nil {
			t.Fatalf("datagram body is not a segment: %v: %q", err, body)
		}
		segs = append(segs, s)
	}

	counts := map[string]int{}
	var acquired, failedRelease, dynamo bool
	for _, root := range segs {
		root.walk(func(s procSegment) {
			counts[s.Name]++
			if s.TraceID != childTraceRoot {
				t.Errorf("segment %s has trace id %q, want %q", s.Name, s.TraceID, childTraceRoot)
			}
			switch s.Name {
			case "lock.acquire":
				if s.Annotations["outcome"] == "ACQUIRED" && s.Annotations["fence"].(float64) > 0 && s.Annotations["takeover"] == false {
					acquired = true
				}
			case "lock.release":
				if s.Annotations["result"] == "failure" {
					failedRelease = true
				}
			case "DynamoDB":
				dynamo = true
			}
		})
	}
	if counts["herdlock"] != 2 || counts["lock.acquire"] != 2 || counts["lock.release"] != 2 {
		t.Errorf("subsegments = %v; want 2 each of herdlock, lock.acquire and lock.release (2 traced invocations)", counts)
	}
	if !acquired || !failedRelease || !dynamo {
		t.Errorf("acquire annotated %v, failed release annotated %v, DynamoDB calls traced %v; want all", acquired, failedRelease, dynamo)
	}
}
