package idempotency_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/middleware/idempotency"
)

// Powertools (expires_after_seconds, 1 h) and Stripe (24 h): an answer is
// replayed for the retention after its completion, to the millisecond,
// and not after. The completions sit next to a second boundary, so that
// an expiry kept in whole seconds (rounded down or up) fails a row.
func TestRetentionAtSecondBoundary(t *testing.T) {
	tests := []struct {
		name       string
		completeAt time.Duration // after a whole second
		askAfter   time.Duration // after the completion
		wantRuns   int32
	}{
		{"just before a second, asked before the expiry's second ends", 999 * time.Millisecond, time.Hour - 499*time.Millisecond, 1},
		{"just before a second, asked 1 ms after the expiry", 999 * time.Millisecond, time.Hour + time.Millisecond, 2},
		{"just after a second, asked 1 ms after the expiry", time.Millisecond, time.Hour + time.Millisecond, 2},
		{"just after a second, asked at the expiry", time.Millisecond, time.Hour, 1},
		{"the default retention, asked 1 ms after it", 500 * time.Millisecond, time.Hour + time.Millisecond, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := &counter{}
				h := wrap(t, c, lockcore.NewMemoryStore(), idempotency.WithRetention(idempotency.Retention{Answers: time.Hour}))
				time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second + tt.completeAt)))
				if _, err := invoke(t, h, time.Minute, order{Key: "k", Amount: 1}); err != nil {
					t.Fatalf("first invoke() = %v", err)
				}
				time.Sleep(tt.askAfter)
				if _, err := invoke(t, h, time.Minute, order{Key: "k", Amount: 1}); err != nil {
					t.Fatalf("second invoke() = %v", err)
				}
				if got := c.runs.Load(); got != tt.wantRuns {
					t.Errorf("handler runs = %d, want %d", got, tt.wantRuns)
				}
			})
		})
	}
}

// Powertools: the expiry is checked in code, DynamoDB's TTL (which may lag
// 48 h) only cleans up: after the retention the record is still in the
// store, its TTL later, and the next invocation runs the handler anyway.
func TestRetentionCheckedInCodeNotByTTL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := lockcore.NewMemoryStore()
		c := &counter{}
		h := wrap(t, c, store, idempotency.WithRetention(idempotency.Retention{Answers: 2 * time.Hour}))
		start := time.Now()
		if _, err := invoke(t, h, time.Minute, order{Key: "k", Amount: 1}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2*time.Hour + time.Second)
		it, found := record(t, store, "herdlock", "idempotency#k")
		if !found {
			t.Fatal("the record is gone after its retention; want it kept until its TTL")
		}
		if ttl := time.Unix(it.TTL, 0); !ttl.After(start.Add(2 * time.Hour)) {
			t.Errorf("record TTL = %v, want after the retention's end %v", ttl, start.Add(2*time.Hour))
		}
		if _, err := invoke(t, h, time.Minute, order{Key: "k", Amount: 1}); err != nil {
			t.Fatal(err)
		}
		if got := c.runs.Load(); got != 2 {
			t.Errorf("handler runs after the retention = %d, want 2", got)
		}
	})
}

// Seconds and milliseconds are kept apart by type: a retention given as
// a bare number (3600, read as nanoseconds) is a configuration error, not
// a retention of 3.6 µs.
func TestRetentionBounds(t *testing.T) {
	tests := []struct {
		name    string
		d       time.Duration
		wantErr bool
	}{
		{"3600 as a Duration", 3600, true},
		{"negative", -time.Second, true},
		{"zero, the default", 0, false},
		{"a second", time.Second, false},
		{"30 days", 30 * 24 * time.Hour, false},
		{"31 days", 30*24*time.Hour + 24*time.Hour, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := idempotency.New(idempotency.Handlers[order, receipt]{Handle: (&counter{}).handle, Key: orderKey},
				lockcore.NewMemoryStore(), quiet(), idempotency.WithRetention(idempotency.Retention{Answers: tt.d}))
			if (err != nil) != tt.wantErr {
				t.Errorf("New(WithRetention(Retention{Answers: %v})) = %v, want error %v", tt.d, err, tt.wantErr)
			}
		})
	}
}
