package fetchcache

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Errors of the upstream client, matched by the [*UpstreamError] of the
// corresponding failure with errors.Is.
var (
	// ErrRateLimited: the upstream answered 429 (code upstream_throttled).
	ErrRateLimited = errors.New("upstream: rate limited")
	// ErrUpstreamStatus: the upstream answered with a status other than
	// 200 or 429, or with a body that is not JSON or too large.
	ErrUpstreamStatus = errors.New("upstream: bad answer")
)

// Failure codes of an [*UpstreamError]. They are short, fixed and safe to
// publish: lockmw releases the lock with the code as the failure reason,
// and the herd's waiters answer with it.
const (
	CodeThrottled   = "upstream_throttled"   // 429
	CodeUnavailable = "upstream_unavailable" // 5xx, or no connection
	CodeTimeout     = "upstream_timeout"     // no answer in time
	CodeBadAnswer   = "upstream_bad_answer"  // another status, a body that is not JSON, too large
)

// Limits of the upstream client.
const (
	// maxBodyBytes keeps the cached item below DynamoDB's 400 KB item size.
	maxBodyBytes = 350 << 10
	// maxRetryAfter bounds the wait an answer can ask for: a later
	// Retry-After is read as this.
	maxRetryAfter = 5 * time.Minute
)

// UpstreamError is the error of an upstream call that brought no document.
// Its message holds the failure code, the status and the wait, never the
// request URL, the answer's body or the transport's error text, which may
// carry tokens or payload fragments: it is safe to log and to return.
//
// It implements the retry hints of package lockmw: RetryAfter is the wait
// the upstream asked for, and FailureReason the code, so the lock's failure
// release tells the whole herd when to try again and why.
type UpstreamError struct {
	// Code is one of CodeThrottled, CodeUnavailable, CodeTimeout and
	// CodeBadAnswer.
	Code string
	// Status is the answer's HTTP status, 0 when there was no answer.
	Status int
	// Wait is how long to wait before the next call: from Retry-After
	// (delay-seconds or an HTTP date, at most 5 minutes); 0 when the
	// upstream gave no usable one (a 5xx, a timeout, a bad answer). A zero
	// wait is no pacing: the lock then bounds the burst's attempts
	// (lockcore.FailureEpisode.MaxAttempts) and backs off after them, rather than
	// retrying at a pace the upstream never asked for.
	Wait time.Duration
	// Cause is the transport's error, when there was one. It may hold the
	// request URL: inspect it, do not log it.
	Cause error
}

func (e *UpstreamError) Error() string {
	msg := "upstream: " + e.Code
	if e.Status != 0 {
		msg += " (status " + strconv.Itoa(e.Status) + ")"
	}
	if e.Wait > 0 {
		msg += ", retry after " + e.Wait.String()
	}
	return msg
}

// Unwrap returns the transport's error, or nil.
func (e *UpstreamError) Unwrap() error { return e.Cause }

// Is makes errors.Is match ErrRateLimited for a 429 and ErrUpstreamStatus for
// a bad answer.
func (e *UpstreamError) Is(target error) bool {
	switch target {
	case ErrRateLimited:
		return e.Code == CodeThrottled
	case ErrUpstreamStatus:
		return e.Code == CodeBadAnswer
	}
	return false
}

// RetryAfter returns Wait: how long the herd should leave the upstream
// alone.
func (e *UpstreamError) RetryAfter() time.Duration { return e.Wait }

// FailureReason returns Code.
func (e *UpstreamError) FailureReason() string { return e.Code }

// Upstream fetches one item from the rate-limited upstream API:
// GET {base}/{item}, which answers a JSON document. It is safe for
// concurrent use.
type Upstream struct {
	base   *url.URL
	client *http.Client
	now    func() time.Time
}

// NewUpstream returns the client of the API at base. client's Timeout, when
// set, bounds each call; the invocation's context bounds it too.
func NewUpstream(base *url.URL, client *http.Client) *Upstream {
	return &Upstream{base: base, client: client, now: time.Now}
}

// Fetch returns the upstream's JSON document for item. It uses ctx for the
// request, so a lost lock or the invocation's deadline cancels the call,
// and then returns the context's cause.
//
// Fetch makes one request and never waits out a Retry-After itself: on a
// 429, a 5xx or a timeout it returns an [*UpstreamError] at once, whose
// RetryAfter the lock publishes with its failure release, so that the
// waiters and newcomers of the burst stay away from the upstream until
// then and the herd makes one call per Retry-After; without one, the
// herd makes at most the lock's attempts per episode
// (lockcore.FailureEpisode.MaxAttempts) and then holds back, longer after each
// exhausted episode. A wait inside the holder
// would hide the failure from the herd, and a retry inside it would
// multiply that bound.
func (u *Upstream) Fetch(ctx context.Context, item string) (json.RawMessage, error) {
	target := u.base.JoinPath(url.PathEscape(item)).String()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return nil, fmt.Errorf("upstream: %w", err)
	}
	return u.do(ctx, req, http.StatusOK)
}

// do sends req and returns its JSON answer when the status is want; any
// other status, a transport error, or an answer that is too large or not
// JSON is an *UpstreamError.
func (u *Upstream) do(ctx context.Context, req *http.Request, want int) (json.RawMessage, error) {
	req.Header.Set("Accept", "application/json")
	resp, err := u.client.Do(req)
	if err != nil {
		return nil, u.transportError(ctx, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != want {
		// Drain a little so that the connection can be reused; the body
		// is never read into an error.
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return nil, u.statusError(resp)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBodyBytes+1))
	if err != nil {
		return nil, u.transportError(ctx, err)
	}
	if len(b) > maxBodyBytes || !json.Valid(b) {
		return nil, &UpstreamError{Code: CodeBadAnswer, Status: resp.StatusCode}
	}
	return json.RawMessage(b), nil
}

// statusError classifies an answer other than 200.
func (u *Upstream) statusError(resp *http.Response) error {
	e := &UpstreamError{Code: CodeBadAnswer, Status: resp.StatusCode}
	switch {
	case resp.StatusCode == http.StatusTooManyRequests:
		e.Code = CodeThrottled
	case resp.StatusCode >= 500:
		e.Code = CodeUnavailable
	default:
		return e
	}
	if d, ok := parseRetryAfter(resp.Header.Get("Retry-After"), u.now()); ok {
		e.Wait = d
	}
	return e
}

// transportError classifies a call that brought no answer. When ctx ended,
// the call was cut short by the lock or the invocation: that is the
// context's cause, not the upstream's failure, unless it is the context's
// own deadline.
func (u *Upstream) transportError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		cause := context.Cause(ctx)
		if !errors.Is(cause, context.DeadlineExceeded) {
			return fmt.Errorf("upstream: %w", cause)
		}
		return &UpstreamError{Code: CodeTimeout, Cause: cause}
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return &UpstreamError{Code: CodeTimeout, Cause: err}
	}
	return &UpstreamError{Code: CodeUnavailable, Cause: err}
}

// parseRetryAfter reads a Retry-After header: delay-seconds or an HTTP date,
// as a wait from now within [0, maxRetryAfter]. ok is false when v is
// missing or unreadable.
func parseRetryAfter(v string, now time.Time) (d time.Duration, ok bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs < 0 {
			return 0, false
		}
		return time.Duration(min(secs, int64(maxRetryAfter/time.Second))) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return min(max(t.Sub(now), 0), maxRetryAfter), true
	}
	return 0, false
}
