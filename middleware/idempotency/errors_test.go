package idempotency_test

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/middleware/idempotency"
)

// Powertools deletes the record of a handler error, so the next duplicate
// runs; so do we by default. With Retention.Errors the error is kept for a
// window, as the draft and Stripe replay an error: a duplicate inside it
// does not run and is told the reason and the not-before; after it, one
// runs.
func TestHandlerErrors(t *testing.T) {
	errUpstream := errors.New("upstream failed")
	tests := []struct {
		name      string
		opts      []idempotency.Option
		after     time.Duration // between the failure and the retry
		wantErr   error         // of the retry
		wantRuns  int32
		wantRetry bool // the retry ran the handler
	}{
		{"not kept: the next duplicate runs", nil, time.Second, errUpstream, 2, true},
		{"kept: a duplicate inside the window does not run", []idempotency.Option{idempotency.WithRetention(idempotency.Retention{Errors: time.Minute})}, 30 * time.Second, lockcore.ErrHolderFailed, 1, false},
		{"kept: a duplicate after the window runs", []idempotency.Option{idempotency.WithRetention(idempotency.Retention{Errors: time.Minute})}, time.Minute + time.Second, errUpstream, 2, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := &counter{err: errUpstream}
				h := wrap(t, c, lockcore.NewMemoryStore(), tt.opts...)
				if _, err := invoke(t, h, 10*time.Second, order{Key: "k", Amount: 1}); !errors.Is(err, errUpstream) || errors.Is(err, lockcore.ErrHolderFailed) {
					t.Fatalf("first invoke() = %v, want the handler's own error", err)
				}
				time.Sleep(tt.after)
				start := time.Now()
				_, err := invoke(t, h, 10*time.Second, order{Key: "k", Amount: 1})
				if !errors.Is(err, tt.wantErr) {
					t.Errorf("retry = %v, want %v", err, tt.wantErr)
				}
				if !tt.wantRetry && time.Since(start) > 0 {
					t.Errorf("the retry inside the window took %v, want an answer at once", time.Since(start))
				}
				var hf *lockcore.HolderFailedError
				if !tt.wantRetry && (!errors.As(err, &hf) || hf.NotBefore.IsZero()) {
					t.Errorf("retry = %v, want a *lockcore.HolderFailedError with the not-before", err)
				}
				if got := c.runs.Load(); got != tt.wantRuns {
					t.Errorf("handler runs = %d, want %d", got, tt.wantRuns)
				}
			})
		})
	}
}
