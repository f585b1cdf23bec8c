package fetchcache

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync/atomic"
	"testing"
	"time"
)

// scripted answers each request with the next status in statuses (the last
// one repeats), and counts requests.
func scripted(t *testing.T, retryAfter string, statuses ...int) (*Upstream, *atomic.Int32) {
	t.Helper()
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := int(n.Add(1)) - 1
		st := statuses[min(i, len(statuses)-1)]
		if r.URL.Path != "/v1/EUR-USD" {
			st = http.StatusNotFound
		}
		if st == http.StatusTooManyRequests {
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

func TestFetchRetriesAfter429(t *testing.T) {
	u, n := scripted(t, "0", http.StatusTooManyRequests, http.StatusTooManyRequests, http.StatusOK)
	got, err := u.Fetch(t.Context(), "EUR-USD")
	if err != nil || string(got) != `{"rate":1.08}` || n.Load() != 3 {
		t.Fatalf("Fetch() = %s, %v after %d requests, want the document after 3", got, err, n.Load())
	}
}

func TestFetchGivesUpWhenRetryAfterPassesTheDeadline(t *testing.T) {
	u, n := scripted(t, "30", http.StatusTooManyRequests)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	start := time.Now()
	_, err := u.Fetch(ctx, "EUR-USD")
	if !errors.Is(err, ErrRateLimited) || n.Load() != 1 {
		t.Fatalf("Fetch() = %v after %d requests, want ErrRateLimited after 1", err, n.Load())
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Fetch() took %v, want it to give up at once", d)
	}
}

func TestFetchGivesUpAfterMaxAttempts(t *testing.T) {
	u, n := scripted(t, "0", http.StatusTooManyRequests)
	_, err := u.Fetch(t.Context(), "EUR-USD")
	if !errors.Is(err, ErrRateLimited) || n.Load() != maxUpstreamAttempts {
		t.Fatalf("Fetch() = %v after %d requests, want ErrRateLimited after %d", err, n.Load(), maxUpstreamAttempts)
	}
}

func TestFetchRejectsBadAnswers(t *testing.T) {
	u, _ := scripted(t, "", http.StatusInternalServerError)
	if _, err := u.Fetch(t.Context(), "EUR-USD"); !errors.Is(err, ErrUpstreamStatus) {
		t.Errorf("Fetch() on 500 = %v, want ErrUpstreamStatus", err)
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
	}{
		{"3", 3 * time.Second},
		{"0", 0},
		{"", defaultRetryAfter},
		{"soon", defaultRetryAfter},
		{now.Add(7 * time.Second).Format(http.TimeFormat), 7 * time.Second},
		{now.Add(-time.Minute).Format(http.TimeFormat), 0},
	}
	for _, tt := range tests {
		if got := parseRetryAfter(tt.in, now); got != tt.want {
			t.Errorf("parseRetryAfter(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}
