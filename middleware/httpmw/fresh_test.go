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

func TestFreshSuccessCarriesMaxAgeOfWhatIsLeft(t *testing.T) {
	for _, s := range shapes {
		t.Run(s.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := &counting{h: okHandler}
				serve := s.wrap(c.handle, lockcore.NewMemoryStore(), quiet(), httpmw.WithFreshSuccess(time.Minute))
				first := request(t, serve, sample(t, s, samplePair), 10*time.Second)
				time.Sleep(15 * time.Second)
				second := request(t, serve, sample(t, s, samplePair), 10*time.Second)
				time.Sleep(46 * time.Second) // past the window
				third := request(t, serve, sample(t, s, samplePair), 10*time.Second)
				for i, tc := range []struct {
					g    got
					want string
				}{{first, "max-age=60"}, {second, "max-age=45"}, {third, "max-age=60"}} {
					if tc.g.Status != 200 || tc.g.header("Cache-Control") != tc.want {
						t.Errorf("request %d: status %d Cache-Control %q, want 200 %q", i, tc.g.Status, tc.g.header("Cache-Control"), tc.want)
					}
				}
				if n := c.count(); n != 2 {
					t.Errorf("handler calls %d, want 2 (the second request is served fresh)", n)
				}
			})
		})
	}
}

func TestNoCacheControlWithoutFreshness(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := shapes[1]
		serve := s.wrap(okHandler, lockcore.NewMemoryStore(), quiet())
		if g := request(t, serve, sample(t, s, samplePair), 10*time.Second); g.header("Cache-Control") != "" {
			t.Errorf("Cache-Control %q without WithFreshSuccess, want none", g.header("Cache-Control"))
		}
	})
}

func TestNoMaxAgeOnOtherStatuses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := shapes[1]
		h := func(context.Context, string) (httpmw.Response[rate], error) {
			return httpmw.Response[rate]{Status: 404}, nil
		}
		serve := s.wrap(h, lockcore.NewMemoryStore(), quiet(), httpmw.WithFreshSuccess(time.Minute))
		if g := request(t, serve, sample(t, s, samplePair), 10*time.Second); g.Status != 404 || g.header("Cache-Control") != "" {
			t.Errorf("status %d Cache-Control %q, want 404 and none", g.Status, g.header("Cache-Control"))
		}
	})
}

func TestHerdGetsOneCallAndIdenticalAnswers(t *testing.T) {
	for _, s := range shapes {
		t.Run(s.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const n = 20
				release := make(chan struct{})
				c := &counting{h: func(ctx context.Context, pair string) (httpmw.Response[rate], error) {
					<-release
					return okHandler(ctx, pair)
				}}
				serve := s.wrap(c.handle, lockcore.NewMemoryStore(), quiet())
				answers := make([]got, n)
				var wg sync.WaitGroup
				for i := range n {
					wg.Go(func() { answers[i] = request(t, serve, sample(t, s, samplePair), 10*time.Second) })
				}
				synctest.Wait()
				close(release)
				wg.Wait()
				if c.count() != 1 {
					t.Errorf("handler calls %d, want 1", c.count())
				}
				for i, g := range answers {
					if g.Status != 200 || string(g.Body) != string(answers[0].Body) {
						t.Errorf("answer %d: %d %s, want 200 %s", i, g.Status, g.Body, answers[0].Body)
					}
				}
			})
		})
	}
}
