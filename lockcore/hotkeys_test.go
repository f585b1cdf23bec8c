package lockcore_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/lockcore/storeapi"
)

// countingMem is a MemoryStore that counts its requests. It embeds the
// store, so Locks on it share the store's own memory of hot keys, as
// Locks on a plain MemoryStore or DynamoStore do.
type countingMem struct {
	*lockcore.MemoryStore
	mu  sync.Mutex
	ops []memOp
}

// memOp is one request: "acquire" or "get", and for a get whether the item
// it returned was acquirable (absent, or released).
type memOp struct {
	op         string
	acquirable bool
}

func newCountingMem() *countingMem { return &countingMem{MemoryStore: lockcore.NewMemoryStore()} }

func (s *countingMem) Acquire(ctx context.Context, req storeapi.AcquireRequest) (storeapi.Item, error) {
	s.log(memOp{op: "acquire"})
	return s.MemoryStore.Acquire(ctx, req)
}

func (s *countingMem) Get(ctx context.Context, k lockcore.Key) (storeapi.Item, bool, error) {
	it, found, err := s.MemoryStore.Get(ctx, k)
	s.log(memOp{op: "get", acquirable: err == nil && (!found || it.Released)})
	return it, found, err
}

func (s *countingMem) log(o memOp) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ops = append(s.ops, o)
}

// take returns the requests since the last take, and forgets them.
func (s *countingMem) take() []memOp {
	s.mu.Lock()
	defer s.mu.Unlock()
	ops := s.ops
	s.ops = nil
	return ops
}

func count(ops []memOp, op string) int {
	n := 0
	for _, o := range ops {
		if o.op == op {
			n++
		}
	}
	return n
}

// An uncontended key the store acquired at once is cold: each later
// TryAcquireElseWaitForRelease on it is exactly one request, the
// conditional write. Only the first call on the key reads first (the store
// has not found it free yet): a read that shows the lock free, then the
// write.
func TestUncontendedIsOneRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newCountingMem()
		for i := range 3 {
			l := newLock(t, s, "solo", lockcore.WithFreshSuccess(0))
			res, err := l.TryAcquireElseWaitForRelease(context.Background())
			if err != nil || res.Outcome != lockcore.Acquired {
				t.Fatalf("episode %d: TryAcquireElseWaitForRelease() = %+v, %v, want Acquired", i, res, err)
			}
			ops := s.take()
			switch {
			case i == 0 && (len(ops) != 2 || ops[0] != memOp{op: "get", acquirable: true} || ops[1].op != "acquire"):
				t.Fatalf("the store's first call: requests %v, want a get that found the lock free, then one acquire", ops)
			case i > 0 && (len(ops) != 1 || ops[0].op != "acquire"):
				t.Fatalf("episode %d: requests %v, want exactly one acquire", i, ops)
			}
			mustRelease(t, l, lockcore.Success, "ref")
			s.take()
		}
	})
}

// A write refused over a live holder makes the key hot on the store: a
// later invocation reads first, and learns the published success from that
// one read, without a write.
func TestHotKeyNewcomerReadsInsteadOfWriting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newCountingMem()
		fresh := lockcore.WithFreshSuccess(10 * time.Second)
		holder := newLock(t, s, "holder", fresh)
		mustAcquire(t, holder)
		waiter := newLock(t, s, "waiter", fresh)
		go func() {
			time.Sleep(300 * time.Millisecond)
			mustRelease(t, holder, lockcore.Success, "ref")
		}()
		res, err := waiter.TryAcquireElseWaitForRelease(context.Background())
		if err != nil || res.Outcome != lockcore.Released {
			t.Fatalf("waiter: TryAcquireElseWaitForRelease() = %+v, %v, want Released", res, err)
		}
		s.take()

		newcomer := newLock(t, s, "newcomer", fresh)
		res, err = newcomer.TryAcquireElseWaitForRelease(context.Background())
		if err != nil || res.Outcome != lockcore.Released || res.ResultRef != "ref" {
			t.Fatalf("newcomer: TryAcquireElseWaitForRelease() = %+v, %v, want Released with ref", res, err)
		}
		if ops := s.take(); len(ops) != 1 || ops[0].op != "get" {
			t.Errorf("newcomer's requests %v, want exactly one get (the key is hot: no write)", ops)
		}
	})
}

// A newcomer on a hot key whose read shows the lock held waits without
// writing; one whose read shows it free writes, and the key is then cold:
// the next invocation writes first again.
func TestHotKeyReadFirstThenCold(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newCountingMem()
		holder := newLock(t, s, "holder")
		mustAcquire(t, holder)
		first := newLock(t, s, "first")
		go func() {
			time.Sleep(time.Second)
			mustRelease(t, holder, lockcore.Success, "ref")
		}()
		done := make(chan struct{})
		go func() {
			defer close(done)
			if res, err := first.TryAcquireElseWaitForRelease(context.Background()); res.Outcome != lockcore.Released {
				t.Errorf("first: TryAcquireElseWaitForRelease() = %+v, %v, want Released", res, err)
			}
		}()
		time.Sleep(100 * time.Millisecond) // first's write was refused: hot
		synctest.Wait()
		s.take()
		second := newLock(t, s, "second")
		res, err := second.TryAcquireElseWaitForRelease(context.Background())
		if err != nil || res.Outcome != lockcore.Released {
			t.Fatalf("second: TryAcquireElseWaitForRelease() = %+v, %v, want Released", res, err)
		}
		<-done
		if ops := s.take(); count(ops, "acquire") != 0 {
			t.Errorf("requests while the key was held: %v, want no acquire (both read)", ops)
		}

		// No fresh-success window: the read shows a released lock, the
		// write follows and the key is cold.
		third := newLock(t, s, "third")
		res, err = third.TryAcquireElseWaitForRelease(context.Background())
		if err != nil || res.Outcome != lockcore.Acquired {
			t.Fatalf("third: TryAcquireElseWaitForRelease() = %+v, %v, want Acquired", res, err)
		}
		if ops := s.take(); len(ops) != 2 || ops[0].op != "get" || ops[1].op != "acquire" {
			t.Errorf("third's requests %v, want get then acquire", ops)
		}
		mustRelease(t, third, lockcore.Success, "ref")
		s.take()
		fourth := newLock(t, s, "fourth")
		if res, err := fourth.TryAcquireElseWaitForRelease(context.Background()); err != nil || res.Outcome != lockcore.Acquired {
			t.Fatalf("fourth: TryAcquireElseWaitForRelease() = %+v, %v, want Acquired", res, err)
		}
		if ops := s.take(); len(ops) != 1 || ops[0].op != "acquire" {
			t.Errorf("fourth's requests %v, want one acquire (the key is cold again)", ops)
		}
		mustRelease(t, fourth, lockcore.Success, "ref")
	})
}

// A key acquired at once stays cold for the lease (or the fresh-success
// window when longer): within it the next call writes first; after it the
// key is hot again, as every key the memory has not found free recently,
// and the next call reads first.
func TestColdKeyExpires(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newCountingMem()
		lease := lockcore.WithLease(2 * time.Second)
		for i, tt := range []struct {
			after time.Duration
			want  []memOp
		}{
			{0, []memOp{{op: "get", acquirable: true}, {op: "acquire"}}}, // not found free yet
			{time.Second, []memOp{{op: "acquire"}}},                      // cold
			{3 * time.Second, []memOp{{op: "get", acquirable: true}, {op: "acquire"}}},
		} {
			time.Sleep(tt.after)
			l := newLock(t, s, "solo", lease, lockcore.WithFreshSuccess(0))
			if res, err := l.TryAcquireElseWaitForRelease(context.Background()); err != nil || res.Outcome != lockcore.Acquired {
				t.Fatalf("call %d: TryAcquireElseWaitForRelease() = %+v, %v, want Acquired", i, res, err)
			}
			if ops := s.take(); fmt.Sprint(ops) != fmt.Sprint(tt.want) {
				t.Errorf("call %d, %v after the last: requests %v, want %v", i, tt.after, ops, tt.want)
			}
			mustRelease(t, l, lockcore.Success, "ref")
		}
	})
}

// WithHerd(Herd{NoHotKeys: true}) turns the memory off: a refused write does not make
// later invocations read first.
func TestWithoutHotKeysWritesFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newCountingMem()
		holder := newLock(t, s, "holder")
		mustAcquire(t, holder)
		for _, name := range []string{"a", "b"} {
			l := newLock(t, s, name, lockcore.WithHerd(lockcore.Herd{NoHotKeys: true}), lockcore.WithMaxWait(50*time.Millisecond))
			s.take()
			l.TryAcquireElseWaitForRelease(context.Background())
			if ops := s.take(); len(ops) == 0 || ops[0].op != "acquire" {
				t.Errorf("%s: requests %v, want an acquire first", name, ops)
			}
		}
		mustRelease(t, holder, lockcore.Success, "ref")
	})
}

// After the first request of a wait, every write is preceded by a read
// that showed the lock acquirable: a throttled first write and a released
// failure cost two writes in all, not one per poll.
func TestWaitWritesOnlyAfterAcquirableRead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newCountingMem()
		holder := newLock(t, s, "holder")
		mustAcquire(t, holder)
		s.take()
		throttled := true
		store := &hookStore{Store: s, acquire: func(ctx context.Context, req storeapi.AcquireRequest) (storeapi.Item, error) {
			if throttled {
				throttled = false
				s.log(memOp{op: "acquire"})
				return storeapi.Item{}, errThrottle
			}
			return s.Acquire(ctx, req)
		}}
		waiter := newLock(t, store, "waiter")
		go func() {
			time.Sleep(time.Second)
			mustRelease(t, holder, lockcore.Failure, "")
		}()
		res, err := waiter.TryAcquireElseWaitForRelease(context.Background())
		if err != nil || res.Outcome != lockcore.Acquired {
			t.Fatalf("TryAcquireElseWaitForRelease() = %+v, %v, want Acquired after the failure", res, err)
		}
		mustRelease(t, waiter, lockcore.Success, "ref")
		waiterOps := s.take() // releases are not logged
		if got := count(waiterOps, "acquire"); got != 2 {
			t.Errorf("writes = %d, want 2 (the throttled first, the take-over): %v", got, waiterOps)
		}
		for i, o := range waiterOps {
			if i == 0 || o.op != "acquire" {
				continue
			}
			if prev := waiterOps[i-1]; prev.op != "get" || !prev.acquirable {
				t.Errorf("request %d is a write after %+v, want after a read that showed the lock acquirable", i, prev)
			}
		}
	})
}

// A late arrival on a cold key whose write is refused over a fresh
// success makes the key hot: the next one reads the success without a
// write.
func TestHotKeyFromFreshSuccess(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newCountingMem()
		fresh := lockcore.WithFreshSuccess(10 * time.Second)
		holder := newLock(t, s, "holder", fresh, lockcore.WithFreshSuccess(0))
		holder.TryAcquireElseWaitForRelease(context.Background()) // acquired at once: the key is cold
		mustRelease(t, holder, lockcore.Success, "ref")
		s.take()
		for i, want := range []string{"acquire", "get"} {
			l := newLock(t, s, "late", fresh)
			res, err := l.TryAcquireElseWaitForRelease(context.Background())
			if err != nil || res.Outcome != lockcore.Released {
				t.Fatalf("late %d: TryAcquireElseWaitForRelease() = %+v, %v, want Released", i, res, err)
			}
			if ops := s.take(); len(ops) != 1 || ops[0].op != want {
				t.Errorf("late %d: requests %v, want one %s", i, ops, want)
			}
		}
	})
}

// A burst on a held key from a warm fleet writes nothing: each execution
// environment's memory has served a call on another key (acquired at once,
// so that key is cold), none has found this key free, so each reads first,
// finds the lock held, and waits by reads alone. Before a memory read first
// on every key it had not found free, a warm environment's first request
// on a new key was the conditional write: the burst wrote once per
// invocation and the test failed.
func TestWarmEnvironmentsReadFirstOverAHolder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newCountingMem()
		fresh := lockcore.WithFreshSuccess(10 * time.Second)
		const n = 5
		envs := make([]*lockcore.HotKeys, n)
		for i := range envs {
			envs[i] = lockcore.NewHotKeys(lockcore.DefaultHotKeys)
			other := newLockID(t, s, fmt.Sprintf("other-%d", i), fresh, lockcore.WithHerd(lockcore.Herd{HotKeys: envs[i]}))
			if res, err := other.TryAcquireElseWaitForRelease(context.Background()); err != nil || res.Outcome != lockcore.Acquired {
				t.Fatalf("env %d on its own key: %+v, %v, want Acquired", i, res, err)
			}
			mustRelease(t, other, lockcore.Success, "")
		}
		holder := newLock(t, storeapi.Store(s.MemoryStore), "holder", fresh, lockcore.WithHerd(lockcore.Herd{NoHotKeys: true}))
		mustAcquire(t, holder)
		s.take()
		done := make(chan lockcore.WaitResult, n)
		for i := range n {
			go func() {
				l := newLock(t, s, fmt.Sprintf("env-%d", i), fresh, lockcore.WithHerd(lockcore.Herd{HotKeys: envs[i]}))
				res, err := l.TryAcquireElseWaitForRelease(context.Background())
				if err != nil {
					t.Errorf("env %d: %v", i, err)
				}
				done <- res
			}()
		}
		time.Sleep(100 * time.Millisecond)
		synctest.Wait()
		if ops := s.take(); count(ops, "acquire") != 0 || count(ops, "get") != n {
			t.Errorf("the burst's first requests %v, want %d gets and no acquire", ops, n)
		}
		mustRelease(t, holder, lockcore.Success, "ref")
		for range n {
			if res := <-done; res.Outcome != lockcore.Released || res.ResultRef != "ref" {
				t.Errorf("waiter = %+v, want Released with ref", res)
			}
		}
		if got := count(s.take(), "acquire"); got != 0 {
			t.Errorf("the waiters made %d acquire writes, want none", got)
		}
	})
}

// A burst of new execution environments on a held key writes nothing: each
// environment's first call (a new memory of hot keys) reads first, finds
// the lock held, and waits by reads alone, so the burst spends the item's
// read capacity, not its write capacity. Without a memory
// (WithHerd(Herd{NoHotKeys: true})) the first request is the conditional write.
func TestNewEnvironmentsReadFirstOverAHolder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newCountingMem()
		fresh := lockcore.WithFreshSuccess(10 * time.Second)
		holder := newLock(t, storeapi.Store(s.MemoryStore), "holder", fresh, lockcore.WithHerd(lockcore.Herd{NoHotKeys: true}))
		mustAcquire(t, holder)
		const n = 5
		done := make(chan lockcore.WaitResult, n)
		for i := range n {
			go func() {
				env := lockcore.NewHotKeys(lockcore.DefaultHotKeys) // a new environment's store
				l := newLock(t, s, fmt.Sprintf("env-%d", i), fresh, lockcore.WithHerd(lockcore.Herd{HotKeys: env}))
				res, err := l.TryAcquireElseWaitForRelease(context.Background())
				if err != nil {
					t.Errorf("env %d: %v", i, err)
				}
				done <- res
			}()
		}
		time.Sleep(100 * time.Millisecond)
		synctest.Wait()
		if ops := s.take(); count(ops, "acquire") != 0 || count(ops, "get") != n {
			t.Errorf("the burst's first requests %v, want %d gets and no acquire", ops, n)
		}
		mustRelease(t, holder, lockcore.Success, "ref")
		for range n {
			if res := <-done; res.Outcome != lockcore.Released || res.ResultRef != "ref" {
				t.Errorf("waiter = %+v, want Released with ref", res)
			}
		}
		if got := count(s.take(), "acquire"); got != 0 {
			t.Errorf("the waiters made %d acquire writes, want none", got)
		}

		// No memory: the first request is the write, refused over the holder.
		holder2 := newLock(t, storeapi.Store(s.MemoryStore), "holder", lockcore.WithFreshSuccess(0), lockcore.WithHerd(lockcore.Herd{NoHotKeys: true}))
		mustAcquire(t, holder2)
		go func() {
			time.Sleep(300 * time.Millisecond)
			mustRelease(t, holder2, lockcore.Success, "ref2")
		}()
		s.take()
		l := newLock(t, s, "no-memory", lockcore.WithFreshSuccess(0), lockcore.WithHerd(lockcore.Herd{NoHotKeys: true}))
		if res, err := l.TryAcquireElseWaitForRelease(context.Background()); err != nil || res.Outcome != lockcore.Released {
			t.Fatalf("no memory: TryAcquireElseWaitForRelease() = %+v, %v, want Released", res, err)
		}
		if ops := s.take(); len(ops) == 0 || ops[0].op != "acquire" {
			t.Errorf("no memory: requests %v, want the write first", ops)
		}
	})
}
