package lockcore_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/herdlock/herdlock/lockcore"
)

// lostReleaseAnswers is a MemoryStore whose server applies every release
// but, until lostUntil, loses the answer: the client gets a timeout a little
// later and retries the release it does not know was published.
type lostReleaseAnswers struct {
	*lockcore.MemoryStore
	lostUntil time.Time
}

func (s *lostReleaseAnswers) Release(ctx context.Context, req lockcore.ReleaseRequest) (lockcore.Item, error) {
	it, err := s.MemoryStore.Release(ctx, req)
	if err != nil || !time.Now().Before(s.lostUntil) {
		return it, err
	}
	select {
	case <-ctx.Done():
		return lockcore.Item{}, ctx.Err()
	case <-time.After(100 * time.Millisecond):
		return lockcore.Item{}, clientTimeout{}
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

// cutOffAfterRelease is a holder's store whose first release is applied
// and its answer lost: the client hears nothing until the attempt's
// context ends. From then on the holder's requests are held up in the
// network and never delivered (each ends with a timeout when its attempt
// does) until the test closes heal; then they get through.
type cutOffAfterRelease struct {
	lockcore.Store
	applied chan struct{} // closed when the first release was applied
	heal    chan struct{} // closed by the test: requests get through again
}

func newCutOffAfterRelease(inner lockcore.Store) *cutOffAfterRelease {
	return &cutOffAfterRelease{Store: inner, applied: make(chan struct{}), heal: make(chan struct{})}
}

func (s *cutOffAfterRelease) Release(ctx context.Context, req lockcore.ReleaseRequest) (lockcore.Item, error) {
	select {
	case <-s.applied:
		select {
		case <-s.heal:
			return s.Store.Release(ctx, req)
		case <-ctx.Done():
			return lockcore.Item{}, clientTimeout{}
		}
	default:
	}
	if _, err := s.Store.Release(ctx, req); err != nil {
		return lockcore.Item{}, err
	}
	close(s.applied)
	<-ctx.Done()
	return lockcore.Item{}, clientTimeout{}
}

// A holder's success release is applied and its answer lost. Before its
// retry gets through, a waiter that was RELEASED with that success returns,
// and a copy of the waiter's refused attempt lands on the released item
// (the key held for nobody); the environment's next call frees that copy
// and acquires. The holder's retry, two acquisitions after its
// publication, is still recognised: Release returns nil, as the success
// it published, and that the waiter was served from, stands. It used to
// return ErrLeaseLost.
func TestRetriedReleaseIsRecognisedAfterAFreedLateCopy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		releaseRetriedOverAFreedLateCopy(t, lockcore.NewMemoryStore())
	})
}

// The same on DynamoDB's API (Dynoxide, dynalite), in real time.
func TestRetriedReleaseIsRecognisedAfterAFreedLateCopyOnEveryStore(t *testing.T) {
	for _, st := range everyStore() {
		t.Run(st.name, func(t *testing.T) {
			releaseRetriedOverAFreedLateCopy(t, st.new(t))
		})
	}
}

func releaseRetriedOverAFreedLateCopy(t *testing.T, inner lockcore.Store) {
	t.Helper()
	env := startedEnvironment(t, inner)
	cut := newCutOffAfterRelease(inner)
	holder := newLock(t, cut, "holder", lockcore.WithLease(6*time.Second), env)
	mustAcquire(t, holder)
	fence := holder.Fence()
	copies := newLateCopy(inner)
	done := waitInBackground(newLock(t, copies, "waiter", lockcore.WithLease(6*time.Second), env))
	<-copies.refused // the waiter's first attempt was refused over the holder: it waits

	released := make(chan error, 1)
	go func() { released <- holder.Release(context.Background(), lockcore.Success, "ref") }()
	<-cut.applied
	if got := <-done; got.err != nil || got.res.Outcome != lockcore.Released || got.res.Fence != fence {
		t.Fatalf("wait = %+v, %v; want RELEASED with the holder's success (fence %d)", got.res, got.err, fence)
	}
	landed := copies.land(t)
	next := newLock(t, inner, "next", lockcore.WithLease(6*time.Second), env)
	res, err := next.TryAcquireElseWaitForRelease(context.Background())
	if err != nil || res.Outcome != lockcore.Acquired || res.Fence <= landed.Fence {
		t.Fatalf("next call = %+v, %v; want ACQUIRED above the late copy's fence %d", res, err, landed.Fence)
	}

	close(cut.heal)
	if err := <-released; err != nil {
		t.Errorf("holder's Release() = %v; want nil: its success was published, and the waiter was RELEASED with it", err)
	}
	mustRelease(t, next, lockcore.Success, "next-ref")
}
