package fetchcache

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// scripted answers each request with the next status in statuses (the last
// one repeats), with retryAfter as the Retry-After of the refusals, and
// counts requests.
func scripted(t *testing.T, retryAfter string, statuses ...int) (*Upstream, *atomic.Int32) {
	t.Helper()
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := int(n.Add(1)) - 1
		st := statuses[min(i, len(statuses)-1)]
		if r.URL.Path != "/v1/EUR-USD" {
			st = http.StatusNotFound
		}
		if st != http.StatusOK && retryAfter != "" {
			w.Header().Set("Retry-After", retryAfter)
		}
		w.WriteHeader(st)
		if st == http.StatusOK {
			w.Write([]byte(`{"rate":1.08}`))
		}
	}))
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL + "/v1")
	return NewUpstream(u, srv.Client()), &n
}

func TestFetchOK(t *testing.T) {
	u, n := scripted(t, "", http.StatusOK)
	got, err := u.Fetch(t.Context(), "EUR-USD")
	if err != nil || string(got) != `{"rate":1.08}` || n.Load() != 1 {
		t.Fatalf("Fetch() = %s, %v after %d requests, want the document after 1", got, err, n.Load())
	}
}

func TestFetchFailures(t *testing.T) {
	tests := []struct {
		name       string
		status     int
		retryAfter string
		want       UpstreamError
		is         error
	}{
		{"429 with Retry-After seconds", 429, "2", UpstreamError{Code: CodeThrottled, Status: 429, Wait: 2 * time.Second}, ErrRateLimited},
		{"429 with Retry-After 8", 429, "8", UpstreamError{Code: CodeThrottled, Status: 429, Wait: 8 * time.Second}, ErrRateLimited},
		{"429 without Retry-After", 429, "", UpstreamError{Code: CodeThrottled, Status: 429, Wait: 0}, ErrRateLimited},
		{"429 with garbage", 429, "soon", UpstreamError{Code: CodeThrottled, Status: 429, Wait: 0}, ErrRateLimited},
		{"429 asking for a day", 429, "86400", UpstreamError{Code: CodeThrottled, Status: 429, Wait: maxRetryAfter}, ErrRateLimited},
		{"503 with Retry-After", 503, "3", UpstreamError{Code: CodeUnavailable, Status: 503, Wait: 3 * time.Second}, nil},
		{"500", 500, "", UpstreamError{Code: CodeUnavailable, Status: 500, Wait: 0}, nil},
		{"404", 404, "", UpstreamError{Code: CodeBadAnswer, Status: 404}, ErrUpstreamStatus},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, n := scripted(t, tt.retryAfter, tt.status, http.StatusOK)
			_, err := u.Fetch(t.Context(), "EUR-USD")
			var ue *UpstreamError
			if !errors.As(err, &ue) || *ue != tt.want || n.Load() != 1 {
				t.Fatalf("Fetch() = %#v after %d requests, want %#v after 1 (no retry inside Fetch)", err, n.Load(), tt.want)
			}
			if ue.RetryAfter() != tt.want.Wait || ue.FailureReason() != tt.want.Code {
				t.Errorf("RetryAfter(), FailureReason() = %v, %q, want %v, %q", ue.RetryAfter(), ue.FailureReason(), tt.want.Wait, tt.want.Code)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("errors.Is(%v, %v) = false", err, tt.is)
			}
		})
	}
}

func TestFetchErrorsHoldNoUpstreamText(t *testing.T) {
	const secret = "token=s3cr3t"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/throttled":
			w.Header().Set("Retry-After", "1")
			http.Error(w, "slow down, "+secret, http.StatusTooManyRequests)
		case "/v1/broken":
			http.Error(w, "stack trace with "+secret, http.StatusInternalServerError)
		default:
			w.Write([]byte("not json " + secret))
		}
	}))
	defer srv.Close()
	base, _ := url.Parse(srv.URL + "/v1?" + secret)
	u := NewUpstream(base, srv.Client())
	for _, item := range []string{"throttled", "broken", "garbled"} {
		_, err := u.Fetch(t.Context(), item)
		if err == nil || strings.Contains(err.Error(), "s3cr3t") || strings.Contains(err.Error(), srv.URL) {
			t.Errorf("Fetch(%s) = %v, want an error without the body or the URL", item, err)
		}
	}
	// No connection at all: the transport's text names the URL.
	srv.Close()
	_, err := u.Fetch(t.Context(), "gone")
	var ue *UpstreamError
	if !errors.As(err, &ue) || ue.Code != CodeUnavailable || strings.Contains(err.Error(), "s3cr3t") || ue.Cause == nil {
		t.Errorf("Fetch() with the upstream gone = %v, want %s without the URL, with the cause kept", err, CodeUnavailable)
	}
}

func TestFetchTimeout(t *testing.T) {
	block := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-block:
		}
	}))
	defer srv.Close()
	defer close(block)
	base, _ := url.Parse(srv.URL)
	client := srv.Client()
	client.Timeout = 50 * time.Millisecond
	_, err := NewUpstream(base, client).Fetch(t.Context(), "EUR-USD")
	var ue *UpstreamError
	if !errors.As(err, &ue) || ue.Code != CodeTimeout || ue.RetryAfter() != 0 {
		t.Fatalf("Fetch() past the client's timeout = %v, want %s with no RetryAfter", err, CodeTimeout)
	}
}

func TestFetchIsCancelledWithTheContextCause(t *testing.T) {
	block := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-block:
		}
	}))
	defer srv.Close()
	defer close(block)
	u, _ := url.Parse(srv.URL)
	lost := errors.New("lease lost")
	ctx, cancel := context.WithCancelCause(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := NewUpstream(u, srv.Client()).Fetch(ctx, "EUR-USD")
		done <- err
	}()
	cancel(lost)
	if err := <-done; !errors.Is(err, lost) {
		t.Fatalf("Fetch() = %v, want the context's cause", err)
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"3", 3 * time.Second, true},
		{" 2 ", 2 * time.Second, true},
		{"0", 0, true},
		{"", 0, false},
		{"soon", 0, false},
		{"-4", 0, false},
		{"1.5", 0, false},
		{"99999999999999", maxRetryAfter, true},
		{"99999999999999999999", 0, false}, // beyond int64
		{now.Add(7 * time.Second).Format(http.TimeFormat), 7 * time.Second, true},
		{now.Add(-time.Minute).Format(http.TimeFormat), 0, true},
		{now.Add(48 * time.Hour).Format(http.TimeFormat), maxRetryAfter, true},
		{now.Add(7 * time.Second).Format(time.RFC850), 7 * time.Second, true},
	}
	for _, tt := range tests {
		if got, ok := parseRetryAfter(tt.in, now); got != tt.want || ok != tt.ok {
			t.Errorf("parseRetryAfter(%q) = %v, %t, want %v, %t", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}
