package fetchcache

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Errors of the upstream client.
var (
	// ErrRateLimited: the upstream answered 429 and the wait it asked for
	// does not fit in the time the invocation has left, or it kept
	// answering 429 for every attempt.
	ErrRateLimited = errors.New("upstream: rate limited")
	// ErrUpstreamStatus: the upstream answered with a status other than
	// 200 or 429, or with a body that is not JSON.
	ErrUpstreamStatus = errors.New("upstream: bad answer")
)

// Limits of the upstream client.
const (
	maxUpstreamAttempts = 5
	// maxBodyBytes keeps the cached item below DynamoDB's 400 KB item size.
	maxBodyBytes = 350 << 10
	// defaultRetryAfter is the wait after a 429 without a usable Retry-After.
	defaultRetryAfter = time.Second
)

// Upstream fetches one item from the rate-limited upstream API:
// GET {base}/{item}, which answers a JSON document. It is safe for
// concurrent use.
type Upstream struct {
	base    *url.URL
	client  *http.Client
	now     func() time.Time
	reserve time.Duration // kept free before the deadline: cache write and lock release
}

func NewUpstream(base *url.URL, client *http.Client) *Upstream {
	return &Upstream{base: base, client: client, now: time.Now, reserve: 500 * time.Millisecond}
}

// Fetch returns the upstream's JSON document for item. It uses ctx for the
// request, so a lost lock or the invocation's deadline cancels the call. On
// 429 it waits as long as Retry-After asks, when that wait ends before ctx's
// deadline minus the reserve, and tries again, up to 5 attempts; otherwise it
// returns an error matching ErrRateLimited at once.
func (u *Upstream) Fetch(ctx context.Context, item string) (json.RawMessage, error) {
	target := u.base.JoinPath(url.PathEscape(item)).String()
	for attempt := 1; ; attempt++ {
		body, retryAfter, err := u.get(ctx, target)
		if err == nil || retryAfter < 0 {
			return body, err
		}
		if attempt == maxUpstreamAttempts {
			return nil, fmt.Errorf("%w: still 429 after %d attempts", ErrRateLimited, attempt)
		}
		if dl, ok := ctx.Deadline(); ok && u.now().Add(retryAfter).After(dl.Add(-u.reserve)) {
			return nil, fmt.Errorf("%w: Retry-After %s does not fit before the deadline", ErrRateLimited, retryAfter)
		}
		t := time.NewTimer(retryAfter)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("upstream: waiting to retry: %w", context.Cause(ctx))
		case <-t.C:
		}
	}
}

// get makes one request. retryAfter is the wait the upstream asked for on a
// 429, and -1 for every other outcome.
func (u *Upstream) get(ctx context.Context, target string) (body json.RawMessage, retryAfter time.Duration, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return nil, -1, fmt.Errorf("upstream: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := u.client.Do(req)
	if err != nil {
		if cause := context.Cause(ctx); cause != nil && ctx.Err() != nil {
			return nil, -1, fmt.Errorf("upstream: %w", cause)
		}
		return nil, -1, fmt.Errorf("upstream: %w", err)
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusTooManyRequests:
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxBodyBytes))
		return nil, parseRetryAfter(resp.Header.Get("Retry-After"), u.now()), ErrRateLimited
	default:
		return nil, -1, fmt.Errorf("%w: status %d from %s", ErrUpstreamStatus, resp.StatusCode, target)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBodyBytes+1))
	if err != nil {
		return nil, -1, fmt.Errorf("upstream: reading the answer: %w", err)
	}
	if len(b) > maxBodyBytes {
		return nil, -1, fmt.Errorf("%w: answer larger than %d bytes", ErrUpstreamStatus, maxBodyBytes)
	}
	if !json.Valid(b) {
		return nil, -1, fmt.Errorf("%w: answer is not JSON", ErrUpstreamStatus)
	}
	return json.RawMessage(b), -1, nil
}

// parseRetryAfter reads a Retry-After header: delay-seconds or an HTTP date.
// Missing or unreadable values give defaultRetryAfter.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if secs, err := strconv.Atoi(v); err == nil && secs >= 0 {
		return time.Duration(secs) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0)
	}
	return defaultRetryAfter
}
