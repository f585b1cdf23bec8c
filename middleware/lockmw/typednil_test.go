package lockmw_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/middleware/lockmw"
)

// The quick-start's mistake: NewDynamoStore's error ignored, so a nil
// *DynamoStore reaches the middleware as a non-nil Store. It must be a
// configuration error at New, and from Wrap on every call, never a panic.
func TestTypedNilStoreIsConfigError(t *testing.T) {
	var store *lockcore.DynamoStore
	h := func(ctx context.Context, e event) (string, error) { return "ran", nil }
	f, err := lockmw.New(h, store, keyOf)
	if f != nil || !errors.Is(err, lockcore.ErrConfig) || !errors.Is(err, lockcore.ErrConfig) || !strings.Contains(err.Error(), "store") {
		t.Fatalf("New(typed-nil store) = %v, %v; want nil and an error matching lockcore.ErrConfig", f != nil, err)
	}
	_, err = lockmw.NewHandlers(lockmw.Handlers[event, string]{Fetch: h}, store, keyOf)
	if !errors.Is(err, lockcore.ErrConfig) {
		t.Errorf("NewHandlers(typed-nil store) = %v, want ErrConfig", err)
	}
	w := lockmw.Wrap(h, store, keyOf, lockmw.WithTelemetry(lockmw.Telemetry{Logger: discardLogger()}))
	if out, err := w(t.Context(), event{Key: "k"}); out != "" || !errors.Is(err, lockcore.ErrConfig) {
		t.Errorf("Wrap(typed-nil store)() = %q, %v; want ErrConfig, the handler not run", out, err)
	}
}
