package lockcore_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/lockcore/storeapi"
)

// lostReleaseAnswers is a MemoryStore whose server applies every release
// but, until lostUntil, loses the answer: the client gets a timeout a little
// later and retries the release it does not know was published.
type lostReleaseAnswers struct {
	*lockcore.MemoryStore
	lostUntil time.Time
}

func (s *lostReleaseAnswers) Release(ctx context.Context, req storeapi.ReleaseRequest) (storeapi.Item, error) {
	it, err := s.MemoryStore.Release(ctx, req)
	if err != nil || !time.Now().Before(s.lostUntil) {
		return it, err
	}
	select {
	case <-ctx.Done():
		return storeapi.Item{}, ctx.Err()
	case <-time.After(100 * time.Millisecond):
		return storeapi.Item{}, clientTimeout{}
	}
}

// A success whose release answers were lost, and which its holder therefore
// published again and again, is as old as its first publication: a newcomer
// judges the fresh-success window from then, not from the last retry. Within
// the window it is RELEASED with the success, saying when it was published;
// past it, it acquires, however recently the holder retried.
func TestRetriedReleaseKeepsPublicationTime(t *testing.T) {
	const window = 2500 * time.Millisecond
	tests := []struct {
		name    string
		lostFor time.Duration // how long the release's answers are lost
		arrival time.Duration // when the newcomer comes, after the publication
		want    lockcore.Outcome
	}{
		{"within the window since publication", 1500 * time.Millisecond, 2 * time.Second, lockcore.Released},
		{"past the window since publication, within it since the last retry", 2 * time.Second, 2600 * time.Millisecond, lockcore.Acquired},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := &lostReleaseAnswers{MemoryStore: lockcore.NewMemoryStore()}
				holder := newLock(t, s, "holder", lockcore.WithFreshSuccess(window))
				mustAcquire(t, holder)
				published := time.Now()
				s.lostUntil = published.Add(tt.lostFor)
				mustRelease(t, holder, lockcore.Success, "ref")
				if retried := time.Since(published); retried < tt.lostFor {
					t.Fatalf("release returned %v after publication, want its retries to go on for %v", retried, tt.lostFor)
				}

				time.Sleep(time.Until(published.Add(tt.arrival)))
				newcomer := newLock(t, s, "newcomer", lockcore.WithFreshSuccess(window))
				res, err := newcomer.TryAcquireElseWaitForRelease(context.Background())
				if err != nil || res.Outcome != tt.want {
					t.Fatalf("TryAcquireElseWaitForRelease() %v after publication = %+v, %v; want %v (window %v since publication)",
						tt.arrival, res, err, tt.want, window)
				}
				if res.Outcome == lockcore.Released && res.ReleasedAt.UnixMilli() != published.UnixMilli() {
					t.Errorf("ReleasedAt = %v, want the first publication %v", res.ReleasedAt, published)
				}
				if res.Outcome == lockcore.Acquired {
					mustRelease(t, newcomer, lockcore.Success, "new-ref")
				}
			})
		})
	}
}
