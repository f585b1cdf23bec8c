package lockcore_test

import (
	"bytes"
	"context"
	"github.com/herdlock/herdlock/lockcore/storeapi"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/herdlock/herdlock/lockcore"
)

// heldUpCopy is a waiter's store whose first acquire is refused while an
// earlier copy of the same request is still on its way (the SDK's first
// try, held up in the network): the test lands that copy later with land.
// before, when set, runs just before that first acquire reaches the store.
type heldUpCopy struct {
	hookStore
	mu       sync.Mutex
	first    *storeapi.AcquireRequest
	before   func()
	answered chan struct{} // closed when the first acquire has returned
}

func newHeldUpCopy(inner storeapi.Store, before func()) *heldUpCopy {
	s := &heldUpCopy{hookStore: hookStore{Store: inner}, before: before, answered: make(chan struct{})}
	s.acquire = func(ctx context.Context, req storeapi.AcquireRequest) (storeapi.Item, error) {
		s.mu.Lock()
		first := s.first == nil
		if first {
			r := req
			s.first = &r
		}
		s.mu.Unlock()
		if first && s.before != nil {
			s.before()
		}
		it, err := inner.Acquire(ctx, req)
		if first {
			close(s.answered)
		}
		return it, err
	}
	return s
}

// land applies the held-up copy to the inner store, with whatever answer
// the store's condition gives it.
func (s *heldUpCopy) land(t *testing.T) {
	t.Helper()
	s.mu.Lock()
	req := s.first
	s.mu.Unlock()
	if req == nil {
		t.Fatal("the waiter sent no acquire")
	}
	_, _ = s.Store.Acquire(context.Background(), *req)
}

// waiting is a Lock whose TryAcquireElseWaitForRelease runs in the
// background.
type waiting struct {
	l    *lockcore.Lock
	done <-chan waitOutcome
}

func startWaiting(l *lockcore.Lock) waiting { return waiting{l, waitInBackground(l)} }

// A herd on one key fetches once: a late copy of a waiter's refused
// acquire that lands just after the holder published its success (with
// the default options: no fresh-success window) must not take the lock
// over that success. If it does, the waiter that sent it holds its own
// copy and fetches again, and the success's answer is gone from the item
// for the rest of the herd. Every caller here that is ACQUIRED fetches
// (one upstream call) and publishes; the herd must make exactly one
// upstream call, and every waiter must be RELEASED with that call's
// answer. Both for the wait's first step (refused over the holder) and
// for an attempt within the wait (refused because another waiter won the
// race after a published failure).
func TestAHerdFetchesOnceWhenALateCopyLandsAfterThePublishedSuccess(t *testing.T) {
	tests := []struct {
		name string
		// setUp makes the key held by the fetcher, with the waiter's
		// refused acquire (on its store, returned) already sent; fetched
		// counts the fetcher's upstream call.
		setUp func(t *testing.T, mem storeapi.Store, fetched *atomic.Int32) (fetcher *lockcore.Lock, waiter *heldUpCopy, w waiting)
	}{
		{"the wait's first step", func(t *testing.T, mem storeapi.Store, fetched *atomic.Int32) (*lockcore.Lock, *heldUpCopy, waiting) {
			fetcher := newLock(t, mem, "fetcher")
			mustAcquire(t, fetcher)
			fetched.Add(1)
			store := newHeldUpCopy(mem, nil)
			w := startWaiting(newLock(t, store, "waiter")) // no memory of hot keys: it writes first
			synctest.Wait()                                // refused over the fetcher: waiting
			if store.n("acquire") != 1 {
				t.Fatalf("waiter's acquires = %d, want 1", store.n("acquire"))
			}
			return fetcher, store, w
		}},
		{"an attempt within the wait", func(t *testing.T, mem storeapi.Store, fetched *atomic.Int32) (*lockcore.Lock, *heldUpCopy, waiting) {
			failed := newLock(t, mem, "failed")
			mustAcquire(t, failed)
			fetcher := newLock(t, mem, "fetcher")
			store := newHeldUpCopy(mem, func() { // the other waiter wins the race
				mustAcquire(t, fetcher)
				fetched.Add(1)
			})
			w := startWaiting(newLock(t, store, "waiter", lockcore.WithHerd(lockcore.Herd{ReadFirst: true})))
			synctest.Wait() // the waiter reads the holder: waiting
			time.Sleep(500 * time.Millisecond)
			mustRelease(t, failed, lockcore.Failure, "")
			for store.n("acquire") == 0 {
				time.Sleep(10 * time.Millisecond)
			}
			synctest.Wait()
			if !fetcher.Valid() {
				t.Fatal("the fetcher does not hold the lock")
			}
			return fetcher, store, w
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				mem := lockcore.NewMemoryStore()
				var fetched atomic.Int32
				fetcher, waiter, w := tt.setUp(t, mem, &fetched)
				herd := []waiting{w}
				for _, owner := range []string{"other-1", "other-2"} {
					herd = append(herd, startWaiting(newLock(t, mem, owner, lockcore.WithHerd(lockcore.Herd{ReadFirst: true}))))
				}
				synctest.Wait()

				time.Sleep(time.Second) // the fetcher's work
				answer := []byte(`{"rate":1.0842}`)
				if err := fetcher.Release(context.Background(), lockcore.Success, "ref", lockcore.WithAnswer(answer)); err != nil {
					t.Fatalf("fetcher's Release() = %v", err)
				}
				waiter.land(t) // the held-up copy arrives

				var wg sync.WaitGroup
				outcomes := make([]waitOutcome, 0, 3)
				var mu sync.Mutex
				for _, w := range herd {
					wg.Go(func() {
						got := <-w.done
						if got.err == nil && got.res.Outcome == lockcore.Acquired {
							fetched.Add(1) // it fetches again, and publishes
							time.Sleep(time.Second)
							_ = w.l.Release(context.Background(), lockcore.Success, "ref-again", lockcore.WithAnswer([]byte("again")))
						}
						mu.Lock()
						outcomes = append(outcomes, got)
						mu.Unlock()
					})
				}
				wg.Wait()
				if n := fetched.Load(); n != 1 {
					t.Errorf("upstream calls = %d, want 1: the herd's holder fetched, and the waiters read its success", n)
				}
				for i, got := range outcomes {
					if got.err != nil || got.res.Outcome != lockcore.Released || !bytes.Equal(got.res.Answer, answer) {
						t.Errorf("waiter %d = %v, answer %q, %v; want RELEASED with the fetcher's answer", i, got.res.Outcome, got.res.Answer, got.err)
					}
				}
			})
		})
	}
}

// The same on DynamoDB's API (Dynoxide, dynalite) as on the memory store,
// in real time, for the wait's first step: the held-up copy meets the
// store's real condition (guard B), and the herd still fetches once.
func TestAHerdFetchesOnceWhenALateCopyLandsAfterThePublishedSuccessOnEveryStore(t *testing.T) {
	for _, st := range everyStore() {
		t.Run(st.name, func(t *testing.T) {
			inner := st.new(t)
			fetcher := newLock(t, inner, "fetcher")
			mustAcquire(t, fetcher)
			store := newHeldUpCopy(inner, nil)
			w := startWaiting(newLock(t, store, "waiter", lockcore.WithMaxWait(10*time.Second)))
			<-store.answered                  // refused over the fetcher: waiting
			time.Sleep(50 * time.Millisecond) // the fetcher's work, so its success comes after the copy was sent
			answer := []byte(`{"rate":1.0842}`)
			if err := fetcher.Release(context.Background(), lockcore.Success, "ref", lockcore.WithAnswer(answer)); err != nil {
				t.Fatalf("fetcher's Release() = %v", err)
			}
			store.land(t)
			got := <-w.done
			if got.err != nil || got.res.Outcome != lockcore.Released || !bytes.Equal(got.res.Answer, answer) {
				if got.res.Outcome == lockcore.Acquired {
					_ = w.l.Release(context.Background(), lockcore.Success, "again")
				}
				t.Fatalf("waiter = %v, answer %q, %v; want RELEASED with the fetcher's answer (ACQUIRED is a second upstream call)",
					got.res.Outcome, got.res.Answer, got.err)
			}
		})
	}
}
