package proc

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"
)

// WaitAnswer polls a test server until it answers an HTTP request at all
// (any status is an answer), backing off from 5 ms to 200 ms. newReq makes
// each request. It fails when ctx ends, or when done closes (the server
// exited), with exited's account of that exit. name prefixes the errors.
func WaitAnswer(ctx context.Context, name, endpoint string, newReq func(context.Context) (*http.Request, error), done <-chan struct{}, exited func() string) error {
	client := &http.Client{Timeout: 2 * time.Second}
	delay := 5 * time.Millisecond
	for {
		req, err := newReq(ctx)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		resp, err := client.Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			return nil
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%s: no answer at %s: %w (last error: %v)", name, endpoint, context.Cause(ctx), err)
		case <-done:
			t.Stop()
			return fmt.Errorf("%s: exited: %s", name, exited())
		case <-t.C:
		}
		delay = min(2*delay, 200*time.Millisecond)
	}
}
