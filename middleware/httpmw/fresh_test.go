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

// TestFreshSuccessZeroTurnsTheWindowOff: WithFreshSuccess(0) turns off
// the lock's fresh-success window too, not only the header: a request 1 s
// after a success runs the handler again, where lockmw's default window
// (10 s) answers it from the published success.
func TestFreshSuccessZeroTurnsTheWindowOff(t *testing.T) {
	tests := []struct {
		name  string
		opts  []httpmw.Option
		calls int
	}{
		{"lockmw's default window", nil, 1},
		{"WithFreshSuccess(0)", []httpmw.Option{httpmw.WithFreshSuccess(0)}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := shapes[1]
				c := &counting{h: okHandler}
				serve := s.wrap(c.handle, lockcore.NewMemoryStore(), append([]httpmw.Option{quiet()}, tt.opts...)...)
				for range 2 {
					if g := request(t, serve, sample(t, s, samplePair), 10*time.Second); g.Status != 200 || g.header("Cache-Control") != "" {
						t.Errorf("status %d Cache-Control %q, want 200 and none", g.Status, g.header("Cache-Control"))
					}
					time.Sleep(time.Second)
				}
				if n := c.count(); n != tt.calls {
					t.Errorf("handler calls %d, want %d", n, tt.calls)
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
