package lockmw_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/middleware/lockmw"
)

// At the defaults, an invocation of the same key that arrives after the
// holder released reads the published success instead of fetching again,
// for DefaultFreshSuccess; after that window it fetches.
func TestDefaultFreshSuccess(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &callCounter{Store: lockcore.NewMemoryStore()}
		var fetches atomic.Int32
		h := lockmw.Wrap(func(ctx context.Context, e event) (rate, error) {
			fetches.Add(1)
			return fetchRate(ctx, e)
		}, store, keyOf, options()...)
		invoke := func(i int) {
			ctx, cancel := invocationContext(t.Context(), time.Minute, fmt.Sprint("req-", i))
			defer cancel()
			if _, err := h(ctx, event{Key: "k"}); err != nil {
				t.Fatalf("invocation %d: %v", i, err)
			}
		}
		invoke(0)
		time.Sleep(lockmw.DefaultFreshSuccess - time.Second) // a late arrival of the same burst
		invoke(1)
		if got := fetches.Load(); got != 1 {
			t.Errorf("fetches after a late arrival inside the window = %d, want 1", got)
		}
		time.Sleep(2 * time.Second) // past the window
		invoke(2)
		if got := fetches.Load(); got != 2 {
			t.Errorf("fetches after the window = %d, want 2", got)
		}
	})
}
