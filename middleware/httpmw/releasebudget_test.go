package httpmw_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/herdlock/herdlock/internal/faultstore"
	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/middleware/httpmw"
)

// Behind API Gateway (29 s integration timeout by default) in a 60 s
// function, a holder whose handler returns after 24 s, against a store
// whose releases never answer, is answered before the integration
// timeout: its answer waits for its release, which must not take it past
// the limit that API Gateway answers 504 at.
func TestHolderAnswersBeforeTheIntegrationTimeoutDespiteAHangingRelease(t *testing.T) {
	for _, s := range shapes {
		if !gateway(s) {
			continue
		}
		t.Run(s.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := &counting{h: func(ctx context.Context, pair string) (httpmw.Response[rate], error) {
					time.Sleep(24 * time.Second)
					return okHandler(ctx, pair)
				}}
				serve := s.wrap(c.handle, faultstore.UnansweredReleases{Store: lockcore.NewMemoryStore()}, quiet())
				start := time.Now()
				g := request(t, serve, sample(t, s, samplePair), time.Minute)
				if took := time.Since(start); took >= 29*time.Second {
					t.Errorf("holder: %d after %v, want its answer before the 29 s integration timeout", g.Status, took)
				}
			})
		})
	}
}
