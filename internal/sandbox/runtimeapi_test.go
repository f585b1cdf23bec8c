package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// rawNext makes one GET next as a runtime does, and returns the response
// headers and body.
func rawNext(t *testing.T, ctx context.Context, a *RuntimeAPI) (http.Header, []byte) {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+a.Addr()+"/2018-06-01/runtime/invocation/next", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET next: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET next = %d %s, want 200", resp.StatusCode, body)
	}
	return resp.Header, body
}

func rawPost(t *testing.T, a *RuntimeAPI, path string, body string, hdr map[string]string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, "http://"+a.Addr()+"/2018-06-01/runtime/"+path, strings.NewReader(body))
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func startAPI(t *testing.T, cfg RuntimeAPIConfig) *RuntimeAPI {
	t.Helper()
	a, err := StartRuntimeAPI(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a
}

// TestRuntimeAPIConcurrent has n runtime loops wait at once, then n
// invocations: each loop gets its own, with the headers, and each answer
// reaches its own invocation, in whatever order the loops answer.
func TestRuntimeAPIConcurrent(t *testing.T) {
	const n = 8
	a := startAPI(t, RuntimeAPIConfig{Timeout: 30 * time.Second, FunctionARN: "arn:aws:lambda:eu-west-1:111122223333:function:f"})
	ctx := t.Context()
	var loops, handedOut sync.WaitGroup
	handedOut.Add(n)
	var mu sync.Mutex
	ids := map[string]bool{}
	for range n {
		loops.Go(func() {
			h, body := rawNext(t, ctx, a)
			id := h.Get(HeaderRequestID)
			dl, err := strconv.ParseInt(h.Get(HeaderDeadlineMs), 10, 64)
			if err != nil || time.Until(time.UnixMilli(dl)) < 20*time.Second || time.Until(time.UnixMilli(dl)) > 31*time.Second {
				t.Errorf("deadline header %q (%v), want about 30s ahead", h.Get(HeaderDeadlineMs), err)
			}
			if got := h.Get(HeaderFunctionARN); got != "arn:aws:lambda:eu-west-1:111122223333:function:f" {
				t.Errorf("function ARN header %q", got)
			}
			if !strings.HasPrefix(h.Get(HeaderTraceID), "Root=1-") {
				t.Errorf("trace header %q, want Root=1-...", h.Get(HeaderTraceID))
			}
			mu.Lock()
			if id == "" || ids[id] {
				t.Errorf("request id %q empty or handed out twice", id)
			}
			ids[id] = true
			mu.Unlock()
			handedOut.Done()
			handedOut.Wait() // all n in flight at once
			if code, b := rawPost(t, a, "invocation/"+id+"/response", `{"echo":`+string(body)+`,"id":"`+id+`"}`, nil); code != http.StatusAccepted {
				t.Errorf("POST response = %d %s, want 202", code, b)
			}
		})
	}
	if err := a.WaitForLoops(ctx, n); err != nil {
		t.Fatal(err)
	}
	invs := make([]Invocation, n)
	var calls sync.WaitGroup
	for i := range n {
		calls.Go(func() { invs[i] = a.Invoke(ctx, []byte(strconv.Itoa(i))) })
	}
	calls.Wait()
	loops.Wait()
	for i, inv := range invs {
		var got struct {
			Echo int
			ID   string
		}
		if inv.Err != nil || inv.FunctionError || json.Unmarshal(inv.Body, &got) != nil {
			t.Fatalf("invocation %d: %+v", i, inv)
		}
		if got.Echo != i || got.ID != inv.RequestID {
			t.Errorf("invocation %d (%s) got the answer %s", i, inv.RequestID, inv.Body)
		}
	}
	if s := a.Stats(); s.MaxInFlight != n || s.InFlight != 0 || s.HandedOut != n {
		t.Errorf("Stats() = %+v, want %d at most in flight, none now, %d handed out", s, n, n)
	}
}

// TestRuntimeAPIErrors covers the error answer, an unknown id, a second
// answer, and a timeout.
func TestRuntimeAPIErrors(t *testing.T) {
	a := startAPI(t, RuntimeAPIConfig{Timeout: 300 * time.Millisecond})
	ctx := t.Context()

	done := make(chan Invocation, 1)
	go func() { done <- a.Invoke(ctx, []byte(`{}`)) }()
	h, _ := rawNext(t, ctx, a)
	id := h.Get(HeaderRequestID)
	if code, _ := rawPost(t, a, "invocation/nope/response", "x", nil); code != http.StatusBadRequest {
		t.Errorf("response for an unknown id = %d, want 400", code)
	}
	code, _ := rawPost(t, a, "invocation/"+id+"/error", `{"errorMessage":"boom","errorType":"errorString"}`,
		map[string]string{HeaderErrorType: "errorString"})
	if code != http.StatusAccepted {
		t.Errorf("POST error = %d, want 202", code)
	}
	inv := <-done
	if !inv.FunctionError || inv.ErrorType != "errorString" || !bytes.Contains(inv.Body, []byte("boom")) {
		t.Errorf("invocation after an error = %+v, want the function error", inv)
	}
	if code, _ := rawPost(t, a, "invocation/"+id+"/response", "late", nil); code != http.StatusBadRequest {
		t.Errorf("second answer = %d, want 400: the invocation is over", code)
	}

	// Nobody answers: the server times the invocation out by itself.
	go func() { done <- a.Invoke(ctx, []byte(`{}`)) }()
	rawNext(t, ctx, a)
	inv = <-done
	if !inv.FunctionError || !bytes.Contains(inv.Body, []byte("Task timed out")) {
		t.Errorf("unanswered invocation = %+v, want a timeout", inv)
	}
	if code, _ := rawPost(t, a, "invocation/"+inv.RequestID+"/response", "too late", nil); code != http.StatusBadRequest {
		t.Errorf("answer after the timeout = %d, want 400", code)
	}
	if code, _ := rawPost(t, a, "invocation/"+id+"/other", "", nil); code != http.StatusNotFound {
		t.Errorf("unknown path = %d, want 404", code)
	}
}

// TestRuntimeAPIInitError: after init/error, every invocation fails with
// that error.
func TestRuntimeAPIInitError(t *testing.T) {
	a := startAPI(t, RuntimeAPIConfig{})
	code, _ := rawPost(t, a, "init/error", `{"errorMessage":"no table","errorType":"Runtime.Init"}`, map[string]string{HeaderErrorType: "Runtime.Init"})
	if code != http.StatusAccepted {
		t.Fatalf("POST init/error = %d, want 202", code)
	}
	inv := a.Invoke(t.Context(), []byte(`{}`))
	if !inv.FunctionError || inv.ErrorType != "Runtime.Init" || !bytes.Contains(inv.Body, []byte("no table")) {
		t.Errorf("invocation after the init error = %+v", inv)
	}
}
