package bench

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/herdlock/herdlock/lockcore"
)

// The lockcore figures as Benchmark functions, on one Dynoxide
// server started for the first benchmark that needs it:
//
//	go test -run '^$' -bench . -benchtime 2s ./internal/bench
//
// Compare BenchmarkAcquireRelease and BenchmarkWrapNoop with
// BenchmarkTwoUpdateItems (cmd/bench reports the same ratios from
// interleaved rounds); each reports requests/op as counted by the HTTP
// RoundTripper.

var shared struct {
	once sync.Once
	env  *Env
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.env != nil {
		shared.env.Close()
	}
	os.Exit(code)
}

func benchEnv(b testing.TB) *Env {
	b.Helper()
	shared.once.Do(func() { shared.env, shared.err = StartEnv(context.Background()) })
	if shared.err != nil {
		b.Fatalf("StartEnv() = %v", shared.err)
	}
	return shared.env
}

func reportRequests(b *testing.B, a *Actor, s Snapshot) {
	b.ReportMetric(float64(a.Counter.Since(s).Total)/float64(b.N), "requests/op")
}

func BenchmarkTwoUpdateItems(b *testing.B) {
	a := benchEnv(b).NewActor()
	ctx, key := context.Background(), keyName("bench-raw")
	s := a.Counter.Snapshot()
	i := 0
	for b.Loop() {
		for range 2 {
			i++
			if _, err := a.Client.UpdateItem(ctx, RawUpdateItem(key, i)); err != nil {
				b.Fatalf("UpdateItem() = %v", err)
			}
		}
	}
	reportRequests(b, a, s)
}

func BenchmarkAcquireRelease(b *testing.B) {
	a := benchEnv(b).NewActor()
	ctx, key := context.Background(), keyName("bench-acquire-release")
	s := a.Counter.Snapshot()
	for b.Loop() {
		l, err := newLock(a.Store, key, 0)
		if err != nil {
			b.Fatal(err)
		}
		if ok, err := l.Acquire(ctx); err != nil || !ok {
			b.Fatalf("Acquire() = %v, %v, want true, nil", ok, err)
		}
		if err := l.Release(ctx, lockcore.Success, "ref"); err != nil {
			b.Fatalf("Release() = %v", err)
		}
	}
	reportRequests(b, a, s)
}

func BenchmarkWrapNoop(b *testing.B) {
	a := benchEnv(b).NewActor()
	h, err := NoopWrap(a.Store, keyName("bench-wrap"))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	s := a.Counter.Snapshot()
	for b.Loop() {
		if _, err := h(ctx, struct{}{}); err != nil {
			b.Fatalf("wrapped handler = %v", err)
		}
	}
	reportRequests(b, a, s)
}

// BenchmarkUncontendedWait is an uncontended TryAcquireElseWaitForRelease
// and its Release: on a key the store has not acquired at once before
// ("new-key": the first request is a strongly consistent read, then the
// write; see lockcore.HotKeys) and on the key it acquired at once in the
// previous iteration ("same-key": the write alone).
func BenchmarkUncontendedWait(b *testing.B) {
	for _, same := range []bool{false, true} {
		name := "new-key"
		if same {
			name = "same-key"
		}
		b.Run(name, func(b *testing.B) {
			a := benchEnv(b).NewActor()
			ctx := context.Background()
			key, i := keyName("bench-uncontended-wait"), 0
			s := a.Counter.Snapshot()
			for b.Loop() {
				if i++; !same {
					key = keyName(fmt.Sprintf("bench-uncontended-wait-%d", i))
				}
				l, err := newLock(a.Store, key, i)
				if err != nil {
					b.Fatal(err)
				}
				if res, err := l.TryAcquireElseWaitForRelease(ctx); err != nil || res.Outcome != lockcore.Acquired {
					b.Fatalf("TryAcquireElseWaitForRelease() = %v, %v, want ACQUIRED", res.Outcome, err)
				}
				if err := l.Release(ctx, lockcore.Success, "ref"); err != nil {
					b.Fatalf("Release() = %v", err)
				}
			}
			reportRequests(b, a, s)
		})
	}
}

func BenchmarkRenew(b *testing.B) {
	a := benchEnv(b).NewActor()
	ctx := context.Background()
	l, err := newLock(a.Store, keyName("bench-renew"), 0)
	if err != nil {
		b.Fatal(err)
	}
	if ok, err := l.Acquire(ctx); err != nil || !ok {
		b.Fatalf("Acquire() = %v, %v, want true, nil", ok, err)
	}
	defer l.Release(ctx, lockcore.Success, "")
	l.CancelAutoRenewal()
	s := a.Counter.Snapshot()
	for b.Loop() {
		if err := l.Renew(ctx); err != nil {
			b.Fatalf("Renew() = %v", err)
		}
	}
	reportRequests(b, a, s)
}

// BenchmarkPoll is one waiter's poll: the strongly consistent read of the
// lock item.
func BenchmarkPoll(b *testing.B) {
	a := benchEnv(b).NewActor()
	ctx := context.Background()
	key := keyName("bench-poll")
	l, err := newLock(a.Store, key, 0)
	if err != nil {
		b.Fatal(err)
	}
	if ok, err := l.Acquire(ctx); err != nil || !ok {
		b.Fatalf("Acquire() = %v, %v, want true, nil", ok, err)
	}
	defer l.Release(ctx, lockcore.Success, "")
	s := a.Counter.Snapshot()
	for b.Loop() {
		if _, found, err := a.Store.Get(ctx, l.Key()); err != nil || !found {
			b.Fatalf("Get() = %v, %v", found, err)
		}
	}
	reportRequests(b, a, s)
}
