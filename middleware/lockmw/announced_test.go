package lockmw_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/lockcore/storeapi"
	"github.com/herdlock/herdlock/middleware/lockmw"
)

// hotItemStore is a MemoryStore whose lock item serves only one read in
// ten: the rest are throttled, as a herd past the item's read capacity
// is. Its announcement items are served.
type hotItemStore struct {
	*lockcore.MemoryStore
	gets atomic.Int64
}

func (s *hotItemStore) Get(ctx context.Context, k lockcore.Key) (storeapi.Item, bool, error) {
	if s.gets.Add(1)%10 != 0 {
		return storeapi.Item{}, false, fmt.Errorf("test: lock item over its read capacity: %w", lockcore.ErrThrottled)
	}
	return s.MemoryStore.Get(ctx, k)
}

// A herd whose lock item is throttled learns the holder's success, and
// its inline answer, from release announcements: the invocations that do
// say so in their log line (Info.Announced) and count
// LockAnnouncementRead, one each.
func TestReleasedFromAnnouncementIsTold(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 40
		var fetches atomic.Int64
		fetch := func(ctx context.Context, e event) (string, error) {
			fetches.Add(1)
			time.Sleep(2 * time.Second) // a slow upstream: the herd waits
			return "rates", nil
		}
		var metrics, logs syncBuffer
		logger := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		s := &hotItemStore{MemoryStore: lockcore.NewMemoryStore()}
		h := lockmw.Wrap(fetch, s, keyOf, lockmw.WithLockGroup(group), lockmw.WithTelemetry(lockmw.Telemetry{Logger: logger}),
			lockmw.WithTelemetry(lockmw.Telemetry{EMFWriter: &metrics}), lockmw.WithoutCoalescing())

		outs, errs := burst(t, h, n, 10*time.Second)
		for i := range n {
			if errs[i] != nil || outs[i] != "rates" {
				t.Errorf("invocation %d = %q, %v; want the holder's answer", i, outs[i], errs[i])
			}
		}
		if got := fetches.Load(); got != 1 {
			t.Fatalf("upstream calls = %d, want 1", got)
		}
		released, announced := 0, 0
		for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
			var rec map[string]any
			if err := json.Unmarshal([]byte(line), &rec); err != nil {
				t.Fatalf("log line %q: %v", line, err)
			}
			if rec["outcome"] == "RELEASED" && strings.HasPrefix(fmt.Sprint(rec["msg"]), "lockmw: invocation done") {
				released++
				if rec["announced"] == true {
					announced++
				}
			}
		}
		if released != n-1 || announced == 0 {
			t.Fatalf("RELEASED invocation lines %d (%d announced), want %d with some announced", released, announced, n-1)
		}
		if got := sumMetric(t, metrics.String(), "LockAnnouncementRead"); got != float64(announced) {
			t.Errorf("sum of %s = %v, want %d (the announced lines)", "LockAnnouncementRead", got, announced)
		}
	})
}
