package fetchcache

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/herdlock/herdlock/lockcore"
)

func newTestInlineHandler(t *testing.T, fresh time.Duration) (func(context.Context, Request) (Response, error), *atomic.Int32) {
	t.Helper()
	up, calls := countingUpstream(t)
	h, err := NewInlineHandler(lockcore.NewMemoryStore(), "test", fresh, up, quietOptions...)
	if err != nil {
		t.Fatalf("NewInlineHandler() = %v", err)
	}
	return h, calls
}

// TestInlineHandlerAnswersFromTheLock: the second invocation, while the
// first one's answer is fresh, gets that answer from the lock item.
func TestInlineHandlerAnswersFromTheLock(t *testing.T) {
	h, calls := newTestInlineHandler(t, time.Minute)
	first, err := h(invocationContext(t), Request{Pair: "EUR-USD"})
	if err != nil {
		t.Fatalf("first invocation = %v", err)
	}
	if first.Outcome != "ACQUIRED" || first.Source != SourceUpstream || first.Fence == 0 || calls.Load() != 1 {
		t.Fatalf("first invocation = %+v after %d upstream calls, want ACQUIRED from upstream after 1", first, calls.Load())
	}
	second, err := h(invocationContext(t), Request{Pair: " EUR-USD "})
	if err != nil {
		t.Fatalf("second invocation = %v", err)
	}
	// What the caller sees is the JSON the runtime sends.
	a, _ := json.Marshal(first)
	b, _ := json.Marshal(second)
	if string(a) != string(b) || calls.Load() != 1 {
		t.Errorf("second invocation = %s after %d upstream calls, want the first answer %s after 1", b, calls.Load(), a)
	}
}

func TestInlineHandlerRejectsBadEvents(t *testing.T) {
	h, calls := newTestInlineHandler(t, time.Minute)
	for _, pair := range []string{"", "EUR/USD", "a b"} {
		if _, err := h(invocationContext(t), Request{Pair: pair}); !errors.Is(err, ErrBadRequest) {
			t.Errorf("pair %q: %v, want ErrBadRequest", pair, err)
		}
	}
	if calls.Load() != 0 {
		t.Errorf("upstream calls = %d, want 0", calls.Load())
	}
}
