package fetchcache

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/middleware/lockmw"
)

func TestUnavailableErrorMessage(t *testing.T) {
	at := time.Date(2026, 12, 1, 10, 0, 7, 200e6, time.UTC)
	tests := []struct {
		err  *UnavailableError
		want string
	}{
		{&UnavailableError{Pair: "EUR-USD", Reason: CodeThrottled, RetryAt: at},
			"fetchcache: EUR-USD: the upstream is throttled (upstream_throttled); retry after 2026-12-01T10:00:08Z"},
		{&UnavailableError{Pair: "EUR-USD", Reason: CodeTimeout, RetryAt: at.Truncate(time.Second)},
			"fetchcache: EUR-USD: the upstream did not answer in time (upstream_timeout); retry after 2026-12-01T10:00:07Z"},
		{&UnavailableError{Pair: "EUR-USD", Reason: CodeUnavailable},
			"fetchcache: EUR-USD: the upstream is unavailable (upstream_unavailable); retry later"},
		{&UnavailableError{Pair: "EUR-USD", Reason: "handler_error"},
			"fetchcache: EUR-USD: fetching failed (handler_error); retry later"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
}

func TestOwnFailureKeepsTheHints(t *testing.T) {
	now := time.Now()
	err := ownFailure("EUR-USD", &UpstreamError{Code: CodeThrottled, Status: 429, Wait: 8 * time.Second}, now)
	var ue *UnavailableError
	if !errors.As(err, &ue) || ue.Shared || ue.Reason != CodeThrottled || !ue.RetryAt.Equal(now.Add(8*time.Second)) {
		t.Fatalf("ownFailure() = %#v, want an UnavailableError of its own, retry at now + 8s", err)
	}
	if !errors.Is(err, ErrUnavailable) || !errors.Is(err, ErrRateLimited) {
		t.Errorf("ownFailure() = %v, want it to match ErrUnavailable and ErrRateLimited", err)
	}
	if d := ue.RetryAfter(); d <= 7*time.Second || d > 8*time.Second || ue.FailureReason() != CodeThrottled {
		t.Errorf("RetryAfter(), FailureReason() = %v, %q; want about 8s, %q", d, ue.FailureReason(), CodeThrottled)
	}
	other := errors.New("cache: write failed")
	if got := ownFailure("EUR-USD", other, now); got != other {
		t.Errorf("ownFailure(%v) = %v, want it unchanged", other, got)
	}
}

func TestSharedFailureAnswer(t *testing.T) {
	notBefore := time.Date(2026, 12, 1, 10, 0, 8, 0, time.UTC)
	lockErr := fmt.Errorf("%w: %w", lockmw.ErrLockFailed, &lockcore.HolderFailedError{Reason: CodeThrottled, NotBefore: notBefore, Attempts: 1})
	err := sharedFailure("EUR-USD", lockErr)
	var ue *UnavailableError
	if !errors.As(err, &ue) || !ue.Shared || ue.Reason != CodeThrottled || !ue.RetryAt.Equal(notBefore) {
		t.Fatalf("sharedFailure() = %#v, want a shared UnavailableError, retry at %v", err, notBefore)
	}
	if !errors.Is(err, lockmw.ErrLockFailed) || !errors.Is(err, lockcore.ErrHolderFailed) {
		t.Errorf("sharedFailure() = %v, want it to match ErrLockFailed and ErrHolderFailed", err)
	}
	if ue.RetryAfter() != 0 {
		t.Errorf("RetryAfter() of a past not-before = %v, want 0", ue.RetryAfter())
	}
	timeout := fmt.Errorf("%w: %w", lockmw.ErrLockFailed, lockcore.ErrWaitTimeout)
	if got := sharedFailure("EUR-USD", timeout); got != timeout {
		t.Errorf("sharedFailure(%v) = %v, want it unchanged", timeout, got)
	}
}
