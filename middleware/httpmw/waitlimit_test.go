package httpmw_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/middleware/httpmw"
)

// TestWaitersAnswerBeforeTheFrontsLimit: behind API Gateway (REST, HTTP
// API), whose integration timeout is 29 s by default ("Amazon API Gateway
// quotas"), a request waiting for a 28 s holder in a 60 s function answers
// 503 with Retry-After before 29 s, not API Gateway's bare 504. Function
// URLs and ALB targets have no limit below the function's: there it waits
// for the holder's answer. WithIntegrationTimeout moves the limit.
func TestWaitersAnswerBeforeTheFrontsLimit(t *testing.T) {
	tests := []struct {
		name    string
		applies func(shape) bool
		opts    []httpmw.Option
		status  int
		within  time.Duration // the waiter's answer comes no later
	}{
		{"API Gateway's default", gateway, nil, 503, 27 * time.Second},
		{"API Gateway's limit set to 10 s", gateway, []httpmw.Option{httpmw.WithIntegrationTimeout(10 * time.Second)}, 503, 8 * time.Second},
		{"no limit below the function's", func(s shape) bool { return !gateway(s) }, nil, 200, 28 * time.Second},
	}
	for _, tt := range tests {
		for _, s := range shapes {
			if !tt.applies(s) {
				continue
			}
			t.Run(tt.name+"/"+s.name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					c := &counting{h: func(ctx context.Context, pair string) (httpmw.Response[rate], error) {
						time.Sleep(28 * time.Second)
						return okHandler(ctx, pair)
					}}
					serve := s.wrap(c.handle, lockcore.NewMemoryStore(), append([]httpmw.Option{quiet()}, tt.opts...)...)
					var wg sync.WaitGroup
					wg.Go(func() { request(t, serve, sample(t, s, samplePair), time.Minute) })
					synctest.Wait() // the holder is in its handler
					start := time.Now()
					g := request(t, serve, sample(t, s, samplePair), time.Minute)
					took := time.Since(start)
					if g.Status != tt.status || took > tt.within {
						t.Errorf("waiter: %d after %v, want %d within %v", g.Status, took, tt.status, tt.within)
					}
					if tt.status == 503 && g.header("Retry-After") == "" {
						t.Errorf("waiter's 503 without Retry-After")
					}
					wg.Wait()
				})
			})
		}
	}
}
