package lockmw_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-xray-sdk-go/xray"
	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/middleware/lockmw"
	"github.com/herdlock/herdlock/middleware/lockmw/xraytracer"
)

// panicOnMissing is a context-missing strategy that fails loudly, to prove
// that an untraceable invocation makes no X-Ray call that needs a segment.
type panicOnMissing struct{}

func (panicOnMissing) ContextMissing(v any) { panic(v) }

func TestTracingWithoutSegment(t *testing.T) {
	ctx, err := xray.ContextWithConfig(t.Context(), xray.Config{ContextMissingStrategy: panicOnMissing{}})
	if err != nil {
		t.Fatalf("ContextWithConfig() = %v", err)
	}
	ctx, cancel := invocationContext(ctx, time.Minute, "req")
	defer cancel()
	h := mustNew(t, func(ctx context.Context, e event) (string, error) { return "ok", nil },
		lockcore.NewMemoryStore(), options(lockmw.WithTracer(xraytracer.New()))...)
	if out, err := h(ctx, event{Key: "k"}); out != "ok" || err != nil {
		t.Errorf("h() = %q, %v; want ok, nil", out, err)
	}
}
