package lockcore_test

import (
	"context"
	"errors"
	"sync"
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

// cutOffHolder is a holder's store cut off from the table by the network
// from its first release on: that release is applied and its answer lost
// when deliverFirst is set (the client hears nothing until the attempt's
// context ends), and held up like the rest otherwise. Held-up requests are
// never delivered (each ends with a timeout when its attempt does) until
// the test closes heal; then they get through.
type cutOffHolder struct {
	storeapi.Store
	deliverFirst bool
	once         sync.Once
	sent         chan struct{} // closed when the first release was sent (and, with deliverFirst, applied)
	heal         chan struct{} // closed by the test: requests get through again
}

func newCutOffHolder(inner storeapi.Store, deliverFirst bool) *cutOffHolder {
	return &cutOffHolder{Store: inner, deliverFirst: deliverFirst, sent: make(chan struct{}), heal: make(chan struct{})}
}

func (s *cutOffHolder) Release(ctx context.Context, req storeapi.ReleaseRequest) (storeapi.Item, error) {
	first := false
	s.once.Do(func() { first = true })
	if first && s.deliverFirst {
		if _, err := s.Store.Release(ctx, req); err != nil {
			return storeapi.Item{}, err
		}
		close(s.sent)
		<-ctx.Done()
		return storeapi.Item{}, clientTimeout{}
	}
	if first {
		close(s.sent)
	}
	select {
	case <-s.heal:
		return s.Store.Release(ctx, req)
	case <-ctx.Done():
		return storeapi.Item{}, clientTimeout{}
	}
}

// retriedOverAFreedLateCopy is a holder's release whose retry arrives two
// acquisitions late: a copy of a waiter's refused attempt lands on the
// released item after the waiter returned, and the environment's next call
// frees it and acquires, before the holder's request gets through. The
// waiter's wall clock runs ahead of the holder's by less than the clock
// allowance: only so does a copy of its write get past guard B onto a
// success published after the wait began (by its clock, before).
type retriedOverAFreedLateCopy struct {
	name          string
	result        lockcore.Result
	deliverFirst  bool   // the holder's first release is applied (its answer lost)
	servedWaiter  bool   // the waiter is RELEASED with the holder's success; else it gives up first
	operatorFirst bool   // an operator force-releases the hold before the holder's release is sent
	operatorAfter bool   // an operator force-releases the revision after the holder's release applied
	nextPublishes bool   // the next call publishes its success before the holder's retry gets through
	knownGap      string // when set, the case is skipped: the lock does not meet it yet, for this reason
	wantLost      bool   // the holder is told ErrLeaseLost; else nil
}

var retriedOverAFreedLateCopyCases = []retriedOverAFreedLateCopy{
	// The holder's publication stands, and the waiter was served from
	// it: the retry is recognised (it used to be told ErrLeaseLost).
	{name: "its success applied", result: lockcore.Success, deliverFirst: true, servedWaiter: true},
	// An operator replaced the holder's failure: the holder is told it
	// lost its lease, as it is before anybody acquires.
	{name: "its failure applied then replaced by an operator", result: lockcore.Failure, deliverFirst: true, operatorAfter: true, wantLost: true},
	// Its release never applied: the operator's release stands.
	{name: "force-released before its release", result: lockcore.Success, operatorFirst: true, wantLost: true},
	// The newcomer's whole hold, its publication included, fits in the
	// holder's retries: the holder published all the same. Not yet met:
	// the newcomer's release overwrites the record of the holder's
	// publication, and the acquisition before it replaced the freed copy,
	// so nothing on the item names the holder's revision (the holder is
	// told ErrLeaseLost). Keeping the record one publication longer
	// needs another pair of attributes in both stores.
	{name: "its success applied and the newcomer published since", result: lockcore.Success, deliverFirst: true, servedWaiter: true, nextPublishes: true,
		knownGap: "the record of a publication does not outlive the next one"},
}

// A holder's release that applied, its answer lost, is recognised however
// late its retry comes: Release returns nil after a late copy was freed
// and a newcomer acquired (it used to return ErrLeaseLost, though the
// waiter was RELEASED with that success). A release that did not apply,
// or a failure an operator's force-release replaced, is still told
// ErrLeaseLost.
func TestRetriedReleaseIsRecognisedAfterAFreedLateCopy(t *testing.T) {
	for _, tt := range retriedOverAFreedLateCopyCases {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tt.run(t, lockcore.NewMemoryStore())
			})
		})
	}
}

// The same on DynamoDB's API (Dynoxide, dynalite), in real time.
func TestRetriedReleaseIsRecognisedAfterAFreedLateCopyOnEveryStore(t *testing.T) {
	for _, st := range everyStore() {
		for _, tt := range retriedOverAFreedLateCopyCases {
			t.Run(st.name+"/"+tt.name, func(t *testing.T) {
				tt.run(t, st.new(t))
			})
		}
	}
}

func (tt retriedOverAFreedLateCopy) run(t *testing.T, inner storeapi.Store) {
	t.Helper()
	if tt.knownGap != "" {
		t.Skip("not met yet: " + tt.knownGap)
	}
	env := startedEnvironment(t, inner)
	cut := newCutOffHolder(inner, tt.deliverFirst)
	holder := newLock(t, cut, "holder", lockcore.WithLease(6*time.Second), env)
	mustAcquire(t, holder)
	fence := holder.Fence()
	copies := newLateCopy(inner)
	waitOpts := []lockcore.Option{lockcore.WithLease(6 * time.Second), env, lockcore.WithClocks(lockcore.Clocks{Wall: offsetClock(900 * time.Millisecond)})}
	if !tt.servedWaiter {
		waitOpts = append(waitOpts, lockcore.WithMaxWait(time.Second))
	}
	done := waitInBackground(newLock(t, copies, "waiter", waitOpts...))
	<-copies.refused // the waiter's first attempt was refused over the holder: it waits
	if !tt.servedWaiter {
		if got := <-done; !errors.Is(got.err, lockcore.ErrWaitTimeout) {
			t.Fatalf("wait = %+v, %v; want FAILED with ErrWaitTimeout while the holder holds", got.res, got.err)
		}
	}
	if tt.operatorFirst {
		forceRelease(t, inner, holder.Key())
	}

	released := make(chan error, 1)
	go func() { released <- holder.Release(context.Background(), tt.result, "ref") }()
	<-cut.sent
	if tt.servedWaiter {
		if got := <-done; got.err != nil || got.res.Outcome != lockcore.Released || got.res.Fence != fence {
			t.Fatalf("wait = %+v, %v; want RELEASED with the holder's success (fence %d)", got.res, got.err, fence)
		}
	}
	if tt.operatorAfter {
		forceRelease(t, inner, holder.Key())
	}
	landed := copies.land(t)
	next := newLock(t, inner, "next", lockcore.WithLease(6*time.Second), env)
	res, err := next.TryAcquireElseWaitForRelease(context.Background())
	if err != nil || res.Outcome != lockcore.Acquired || res.Fence <= landed.Fence {
		t.Fatalf("next call = %+v, %v; want ACQUIRED above the late copy's fence %d", res, err, landed.Fence)
	}

	nextRevision := next.Revision()
	if tt.nextPublishes {
		mustRelease(t, next, lockcore.Success, "next-ref")
	}
	close(cut.heal)
	err = <-released
	switch {
	case tt.wantLost && !errors.Is(err, lockcore.ErrLeaseLost):
		t.Errorf("holder's Release(%s) = %v; want ErrLeaseLost: the operator's release was the last of its revision", tt.result, err)
	case !tt.wantLost && err != nil:
		t.Errorf("holder's Release(%s) = %v; want nil: it was published", tt.result, err)
	}
	if tt.nextPublishes {
		if it, _, _ := inner.Get(context.Background(), holder.Key()); it.Revision != nextRevision || !it.Released || it.ResultRef != "next-ref" {
			t.Errorf("item after the holder's retry = %+v; want the next call's publication untouched", it)
		}
		return
	}
	if it, _, _ := inner.Get(context.Background(), holder.Key()); it.Revision != next.Revision() || it.Released {
		t.Errorf("item after the holder's retry = %+v; want the next call's hold untouched", it)
	}
	mustRelease(t, next, lockcore.Success, "next-ref")
}

// lostFirstReleaseAnswer is a store whose server applies a release and
// loses its first answer: the client gets a timeout and retries.
type lostFirstReleaseAnswer struct {
	storeapi.Store
	once sync.Once
}

func (s *lostFirstReleaseAnswer) Release(ctx context.Context, req storeapi.ReleaseRequest) (storeapi.Item, error) {
	it, err := s.Store.Release(ctx, req)
	lost := false
	s.once.Do(func() { lost = err == nil })
	if lost {
		return storeapi.Item{}, clientTimeout{}
	}
	return it, err
}

// A holder that acquired over an operator's force-release and releases a
// failure that keeps the episode (WithKeepEpisode: its input was bad)
// leaves the operator's failure reason on the item, its own release
// writing none. When that release's answer is lost, the retry must still
// be recognised as the holder's own publication (nil), not taken for an
// operator's release of its revision (ErrLeaseLost): no operator touched
// it, and the item records the holder's publication. On every store.
func TestRetriedKeepEpisodeReleaseAfterAnOperatorsReleaseIsRecognised(t *testing.T) {
	for _, st := range everyStore() {
		t.Run(st.name, func(t *testing.T) {
			inner := st.new(t)
			stopped := newLock(t, inner, "stopped")
			mustAcquire(t, stopped)
			forceRelease(t, inner, stopped.Key())
			_ = stopped.Release(context.Background(), lockcore.Failure, "") // stops its keeper; force-released, it publishes nothing

			holder := newLock(t, &lostFirstReleaseAnswer{Store: inner}, "holder")
			mustAcquire(t, holder)
			err := holder.Release(context.Background(), lockcore.Failure, "", lockcore.WithKeepEpisode())
			if err != nil {
				t.Errorf("holder's Release(failure, keep episode) with its first answer lost = %v; want nil: it was published", err)
			}
			it, _, _ := inner.Get(context.Background(), holder.Key())
			if !it.Released || it.PublishedRevision == "" || it.PublishedResult != lockcore.Failure {
				t.Errorf("item = %+v; want the holder's failure published and recorded", it)
			}
		})
	}
}
