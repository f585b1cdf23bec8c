package lockmw_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/herdlock/herdlock/emf"
	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/lockcore/storeapi"
	"github.com/herdlock/herdlock/middleware/lockmw"
)

// opCounter counts the store calls by operation.
type opCounter struct {
	storeapi.Store
	acquires, gets, renews, releases atomic.Int32
}

func (s *opCounter) Acquire(ctx context.Context, req storeapi.AcquireRequest) (storeapi.Item, error) {
	s.acquires.Add(1)
	return s.Store.Acquire(ctx, req)
}

func (s *opCounter) Get(ctx context.Context, key lockcore.Key) (storeapi.Item, bool, error) {
	s.gets.Add(1)
	return s.Store.Get(ctx, key)
}

func (s *opCounter) Renew(ctx context.Context, req storeapi.RenewRequest) (storeapi.Item, error) {
	s.renews.Add(1)
	return s.Store.Renew(ctx, req)
}

func (s *opCounter) Release(ctx context.Context, req storeapi.ReleaseRequest) (storeapi.Item, error) {
	s.releases.Add(1)
	return s.Store.Release(ctx, req)
}

// TestPerInvocationTelemetry runs 48 invocations of one wrapped handler at
// once, as one process of Lambda Managed Instances does, with their own
// request ids and deadlines, on 6 keys. Each handler adds a metric and a
// property through lockmw.Metrics(ctx) and logs through lockmw.Logger(ctx).
// Every EMF document must hold exactly its own invocation's metrics and
// properties, and every handler log line its own request id.
func TestPerInvocationTelemetry(t *testing.T) {
	const n, keys = 48, 6
	var metrics, logs syncBuffer
	m, err := emf.New(emf.WithNamespace("herdlock-test"), emf.WithService("svc"), emf.WithWriter(&metrics))
	if err != nil {
		t.Fatal(err)
	}
	work := func(ctx context.Context, e event) (string, error) {
		info, _ := lockmw.FromContext(ctx)
		lockmw.Logger(ctx).InfoContext(ctx, "handler", slog.String("mine", e.Req))
		if err := lockmw.Metrics(ctx).Add("HandlerWork", emf.Count, float64(e.N)); err != nil {
			return "", err
		}
		if err := lockmw.Metrics(ctx).SetProperty("handlerRequest", e.Req); err != nil {
			return "", err
		}
		return e.Key + "@" + strconv.FormatInt(info.Fence, 10), nil
	}
	h := mustNewHandlers(t, lockmw.Handlers[event, string]{Fetch: work, OnReleased: work}, lockcore.NewMemoryStore(),
		lockmw.WithLockGroup(group), lockmw.WithTelemetry(lockmw.Telemetry{EMF: m}),
		lockmw.WithTelemetry(lockmw.Telemetry{Logger: slog.New(slog.NewJSONHandler(&logs, nil))}))

	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			req := "req-" + strconv.Itoa(i)
			ctx, cancel := invocationContext(t.Context(), 10*time.Second+time.Duration(i)*100*time.Millisecond, req)
			defer cancel()
			<-start
			if _, err := h(ctx, event{Key: "k" + strconv.Itoa(i%keys), Req: req, N: i}); err != nil {
				t.Errorf("invocation %s: %v", req, err)
			}
		})
	}
	close(start)
	wg.Wait()

	seen := map[string]bool{}
	for _, d := range emfDocs(t, metrics.String()) {
		req, _ := d["requestId"].(string)
		i, err := strconv.Atoi(req[len("req-"):])
		if err != nil || seen[req] {
			t.Errorf("document with request id %q: not one of ours, or a second one", req)
			continue
		}
		seen[req] = true
		if d["handlerRequest"] != req || d["HandlerWork"] != float64(i) || d["lockId"] != "k"+strconv.Itoa(i%keys) {
			t.Errorf("document of %s holds handlerRequest %v, HandlerWork %v, lockId %v; want its own", req, d["handlerRequest"], d["HandlerWork"], d["lockId"])
		}
		if o := d["lockOutcome"]; o != "ACQUIRED" && o != "RELEASED" {
			t.Errorf("document of %s: outcome %v", req, o)
		}
	}
	if len(seen) != n {
		t.Errorf("%d documents with a request id, want %d", len(seen), n)
	}
	handlerLines := 0
	for _, l := range logJSON(t, logs.String()) {
		if l["msg"] == "handler" {
			handlerLines++
			if l["requestId"] != l["mine"] {
				t.Errorf("handler log line of %v carries requestId %v", l["mine"], l["requestId"])
			}
		}
	}
	if handlerLines != n {
		t.Errorf("%d handler log lines, want %d", handlerLines, n)
	}
}

// TestTelemetryOutsideHandler: outside a wrapped handler, Metrics is a nil
// batch that records nothing and Logger is slog's default.
func TestTelemetryOutsideHandler(t *testing.T) {
	ctx := context.Background()
	if b := lockmw.Metrics(ctx); b != nil || b.Add("X", emf.Count, 1) != nil {
		t.Errorf("Metrics() outside a handler = %v, want a nil batch that accepts and drops", b)
	}
	if lockmw.Logger(ctx) != slog.Default() {
		t.Error("Logger() outside a handler is not slog.Default()")
	}
}

// coalescedHerd runs n same-key invocations at once in a synctest bubble.
// The first to arrive leads: its Fetch takes work; the others arrive while
// it works. timeout(i) is invocation i's function timeout; arrive(i), when
// set, how long after the start invocation i arrives; ctx(i, ctx), when
// set, the context invocation i gets instead of ctx.
type coalescedHerd struct {
	n       int
	work    time.Duration
	fetch   func(ctx context.Context, e event) (string, error) // default: wait work, then the fence
	timeout func(i int) time.Duration
	arrive  func(i int) time.Duration
	ctx     func(i int, ctx context.Context) context.Context
	opts    []lockmw.Option

	store   *opCounter // a MemoryStore's, unless set before run
	metrics syncBuffer
	fetches atomic.Int32
	infos   []lockmw.Info
	outs    []string
	errs    []error
	ends    []time.Time
}

func (hd *coalescedHerd) run(t *testing.T) {
	t.Helper()
	if hd.store == nil {
		hd.store = &opCounter{Store: lockcore.NewMemoryStore()}
	}
	hd.infos, hd.outs, hd.errs, hd.ends = make([]lockmw.Info, hd.n), make([]string, hd.n), make([]error, hd.n), make([]time.Time, hd.n)
	fetch := hd.fetch
	if fetch == nil {
		fetch = func(ctx context.Context, e event) (string, error) {
			time.Sleep(hd.work)
			info, _ := lockmw.FromContext(ctx)
			return "v@" + strconv.FormatInt(info.Fence, 10), nil
		}
	}
	read := func(ctx context.Context, e event) (string, error) {
		info, _ := lockmw.FromContext(ctx)
		hd.infos[e.N] = info
		return "read " + info.ResultRef, nil
	}
	h := mustNewHandlers(t, lockmw.Handlers[event, string]{
		Fetch: func(ctx context.Context, e event) (string, error) {
			hd.fetches.Add(1)
			hd.infos[e.N], _ = lockmw.FromContext(ctx)
			return fetch(ctx, e)
		},
		OnReleased: read,
		ResultRef:  func(s string) string { return "ref:" + s },
	}, hd.store, append([]lockmw.Option{lockmw.WithLockGroup(group), lockmw.WithTelemetry(lockmw.Telemetry{Logger: discardLogger()}),
		lockmw.WithTelemetry(lockmw.Telemetry{EMF: newTestMetrics(t, &hd.metrics)})}, hd.opts...)...)
	var wg sync.WaitGroup
	for i := range hd.n {
		timeout := time.Minute
		if hd.timeout != nil {
			timeout = hd.timeout(i)
		}
		wg.Go(func() {
			if hd.arrive != nil {
				time.Sleep(hd.arrive(i))
			}
			ctx, cancel := invocationContext(t.Context(), timeout, "req-"+strconv.Itoa(i))
			defer cancel()
			if hd.ctx != nil {
				ctx = hd.ctx(i, ctx)
			}
			hd.outs[i], hd.errs[i] = h(ctx, event{Key: "EUR-USD", N: i})
			hd.ends[i] = time.Now()
		})
		if i == 0 {
			synctest.Wait() // the leader is at work before the others arrive
		}
	}
	wg.Wait()
}

// sum adds metric name over the herd's documents.
func (hd *coalescedHerd) sum(t *testing.T, name string) float64 {
	var s float64
	for _, d := range emfDocs(t, hd.metrics.String()) {
		if v, ok := d[name].(float64); ok {
			s += v
		}
	}
	return s
}

// TestCoalescedHerd: 16 same-key invocations in one process make one lock
// acquire and one release, no poll; the 15 followers are RELEASED with the
// leader's fence and reference, at the leader's release, and OnReleased
// runs for them.
func TestCoalescedHerd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hd := &coalescedHerd{n: 16, work: 3 * time.Second}
		hd.run(t)
		if hd.fetches.Load() != 1 {
			t.Fatalf("fetches = %d, want 1", hd.fetches.Load())
		}
		leader := hd.infos[0]
		for i := 1; i < hd.n; i++ {
			got := hd.infos[i]
			if hd.errs[i] != nil || got.Outcome != lockcore.Released || !got.Coalesced || got.Fence != leader.Fence ||
				got.ResultRef != "ref:v@"+strconv.FormatInt(leader.Fence, 10) || hd.outs[i] != "read "+got.ResultRef {
				t.Errorf("follower %d: %+v, %q, %v; want RELEASED, coalesced, the leader's fence %d and reference", i, got, hd.outs[i], hd.errs[i], leader.Fence)
			}
			if !hd.ends[i].Equal(hd.ends[0]) {
				t.Errorf("follower %d returned %v after the leader, want at the same instant", i, hd.ends[i].Sub(hd.ends[0]))
			}
		}
		if a, g, r := hd.store.acquires.Load(), hd.store.gets.Load(), hd.store.releases.Load(); a != 1 || g != 0 || r != 1 {
			t.Errorf("store calls: %d acquires, %d reads, %d releases; want 1, 0, 1", a, g, r)
		}
		if got := hd.sum(t, "LockCoalesced"); got != float64(hd.n-1) {
			t.Errorf("sum of %s = %v, want %d", "LockCoalesced", got, hd.n-1)
		}
		if got := hd.sum(t, "LockAcquisitionSuccess"); got != 1 {
			t.Errorf("sum of %s = %v, want 1", "LockAcquisitionSuccess", got)
		}
	})
}

// TestCoalescingOff: with WithoutCoalescing(), every invocation tries the
// lock on the store.
func TestCoalescingOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hd := &coalescedHerd{n: 4, work: 3 * time.Second, opts: []lockmw.Option{lockmw.WithoutCoalescing()}}
		hd.run(t)
		if a, g := hd.store.acquires.Load(), hd.store.gets.Load(); a < 4 || g == 0 {
			t.Errorf("store calls: %d acquires, %d reads; want one acquire each and polls", a, g)
		}
		for i := 1; i < hd.n; i++ {
			if hd.infos[i].Coalesced || hd.infos[i].Outcome != lockcore.Released {
				t.Errorf("waiter %d: %+v, want RELEASED by its own polls", i, hd.infos[i])
			}
		}
	})
}

// TestCoalescedLeaderFails: when the leader's handler fails, its followers
// do not share the failure: they try the lock on their own, one of them
// fetches, and the others are RELEASED by their own polls.
func TestCoalescedLeaderFails(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		first := true
		var mu sync.Mutex
		hd := &coalescedHerd{n: 6, fetch: func(ctx context.Context, e event) (string, error) {
			mu.Lock()
			fail := first
			first = false
			mu.Unlock()
			time.Sleep(time.Second)
			if fail {
				return "", errors.New("upstream 503")
			}
			info, _ := lockmw.FromContext(ctx)
			return "v@" + strconv.FormatInt(info.Fence, 10), nil
		}}
		hd.run(t)
		if hd.errs[0] == nil {
			t.Error("the leader returned no error")
		}
		if hd.fetches.Load() != 2 {
			t.Errorf("fetches = %d, want 2: the leader's and one follower's", hd.fetches.Load())
		}
		for i := 1; i < hd.n; i++ {
			if hd.errs[i] != nil || hd.infos[i].Coalesced {
				t.Errorf("follower %d: %+v, %v; want an answer of its own attempt", i, hd.infos[i], hd.errs[i])
			}
		}
		if got := hd.sum(t, "LockCoalescedFallThrough"); got != float64(hd.n-1) {
			t.Errorf("sum of %s = %v, want %d", "LockCoalescedFallThrough", got, hd.n-1)
		}
	})
}

// TestCoalescedDeadlines: a follower with less time than the leader needs
// fails at its own deadline less the margin; a leader with less time than
// a follower runs out and the follower, not sharing that failure, takes
// the lock and fetches.
func TestCoalescedDeadlines(t *testing.T) {
	t.Run("follower's deadline first", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			start := time.Now()
			hd := &coalescedHerd{n: 3, work: 20 * time.Second, timeout: func(i int) time.Duration {
				return []time.Duration{time.Minute, 5 * time.Second, time.Minute}[i]
			}}
			hd.run(t)
			if err := hd.errs[1]; !errors.Is(err, lockmw.ErrLockFailed) || !errors.Is(err, lockcore.ErrWaitTimeout) {
				t.Errorf("short follower: %v, want ErrLockFailed and ErrWaitTimeout", err)
			}
			if got, want := hd.ends[1].Sub(start), 5*time.Second-lockmw.DefaultSafetyMargin; got != want {
				t.Errorf("short follower returned after %v, want %v: its deadline less the margin", got, want)
			}
			if hd.errs[2] != nil || !hd.infos[2].Coalesced {
				t.Errorf("long follower: %+v, %v; want the leader's result", hd.infos[2], hd.errs[2])
			}
		})
	})
	t.Run("maximum wait", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			start := time.Now()
			hd := &coalescedHerd{n: 2, work: 20 * time.Second,
				opts: []lockmw.Option{lockmw.WithLockOptions(lockcore.WithMaxWait(5 * time.Second))}}
			hd.run(t)
			if err := hd.errs[1]; !errors.Is(err, lockcore.ErrWaitTimeout) || hd.ends[1].Sub(start) != 5*time.Second {
				t.Errorf("follower: %v after %v, want ErrWaitTimeout after the 5s maximum wait", err, hd.ends[1].Sub(start))
			}
			if hd.errs[0] != nil {
				t.Errorf("leader: %v", hd.errs[0])
			}
		})
	})
	t.Run("leader's deadline first", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var calls atomic.Int32
			hd := &coalescedHerd{n: 2,
				timeout: func(i int) time.Duration { return []time.Duration{6 * time.Second, time.Minute}[i] },
				fetch: func(ctx context.Context, e event) (string, error) {
					if calls.Add(1) == 1 { // the leader's upstream outlasts its hold
						select {
						case <-time.After(time.Minute):
						case <-ctx.Done():
							return "", context.Cause(ctx)
						}
					}
					info, _ := lockmw.FromContext(ctx)
					return "v@" + strconv.FormatInt(info.Fence, 10), nil
				}}
			hd.run(t)
			if !errors.Is(hd.errs[0], lockcore.ErrMaxHoldReached) {
				t.Errorf("leader: %v, want ErrMaxHoldReached", hd.errs[0])
			}
			if got := hd.infos[1]; hd.errs[1] != nil || got.Outcome != lockcore.Acquired || got.Coalesced {
				t.Errorf("follower: %+v, %v; want ACQUIRED by its own attempt", got, hd.errs[1])
			}
		})
	})
}

// TestPanicAsError: with WithPanicAsError the panic becomes the
// invocation's error, the lock is released as failure, the followers fall
// through, and the wrapped handler keeps serving.
func TestPanicAsError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int32
		hd := &coalescedHerd{n: 3, opts: []lockmw.Option{lockmw.WithPanicAsError()},
			fetch: func(ctx context.Context, e event) (string, error) {
				time.Sleep(time.Second) // the others arrive meanwhile
				if calls.Add(1) == 1 {
					panic(fmt.Errorf("parser: %w", errEndOfInput))
				}
				info, _ := lockmw.FromContext(ctx)
				return "v@" + strconv.FormatInt(info.Fence, 10), nil
			}}
		hd.run(t)
		if err := hd.errs[0]; !errors.Is(err, lockmw.ErrHandlerPanicked) || !errors.Is(err, errEndOfInput) {
			t.Errorf("panicking invocation: %v, want ErrHandlerPanicked wrapping the panic's error", err)
		}
		for i := 1; i < hd.n; i++ {
			if hd.errs[i] != nil || hd.infos[i].Coalesced {
				t.Errorf("follower %d: %+v, %v; want an answer of its own attempt", i, hd.infos[i], hd.errs[i])
			}
		}
		if hd.fetches.Load() != 2 {
			t.Errorf("fetches = %d, want 2", hd.fetches.Load())
		}
	})
}

var errEndOfInput = errors.New("unexpected end of input")

func logJSON(t *testing.T, s string) []map[string]any { return emfDocs(t, s) }

// TestCoalescedLeaderWaits: when another process holds the lock, only the
// leader polls the store; when that holder publishes success, the leader
// and its followers are all RELEASED with its fence and reference.
func TestCoalescedLeaderWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &opCounter{Store: lockcore.NewMemoryStore()}
		other := holdElsewhere(t, t.Context(), store, "EUR-USD")
		store.acquires.Store(0)
		var reads atomic.Int32
		infos := make([]lockmw.Info, 8)
		h := mustNewHandlers(t, lockmw.Handlers[event, string]{
			Fetch: func(context.Context, event) (string, error) {
				return "", errors.New("fetched, but another holder has it")
			},
			OnReleased: func(ctx context.Context, e event) (string, error) {
				reads.Add(1)
				infos[e.N], _ = lockmw.FromContext(ctx)
				return "read", nil
			},
		}, store, options()...)
		var wg sync.WaitGroup
		for i := range infos {
			ctx, cancel := invocationContext(t.Context(), time.Minute, "req-"+strconv.Itoa(i))
			defer cancel()
			wg.Go(func() {
				if _, err := h(ctx, event{Key: "EUR-USD", N: i}); err != nil {
					t.Errorf("invocation %d: %v", i, err)
				}
			})
		}
		time.Sleep(2 * time.Second)
		fence := other.Fence()
		if err := other.Release(t.Context(), lockcore.Success, "ref-other"); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		if a := store.acquires.Load(); a != 1 {
			t.Errorf("acquire attempts = %d, want 1: the leader's", a)
		}
		coalesced := 0
		for i, info := range infos {
			if info.Outcome != lockcore.Released || info.ResultRef != "ref-other" || info.Fence != fence {
				t.Errorf("invocation %d: %+v, want RELEASED with the other holder's fence %d and reference", i, info, fence)
			}
			if info.Coalesced {
				coalesced++
			}
		}
		if coalesced != len(infos)-1 || reads.Load() != int32(len(infos)) {
			t.Errorf("coalesced %d, reads %d; want %d and %d", coalesced, reads.Load(), len(infos)-1, len(infos))
		}
	})
}
