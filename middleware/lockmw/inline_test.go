package lockmw_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/herdlock/herdlock/internal/allold"
	"github.com/herdlock/herdlock/internal/dynalite"
	"github.com/herdlock/herdlock/internal/dynalite/dynalitetest"
	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/lockcore/storeapi"
	"github.com/herdlock/herdlock/middleware/lockmw"
)

// rate is a typed answer.
type rate struct {
	Pair  string
	Bid   float64
	Fence int64
	Tags  []string
}

// herd runs n concurrent invocations of h on one key through store, each
// making its own lock attempt as if in its own process (no in-process
// coalescing). The holder's Fetch waits until every other invocation has
// been refused once, so all of them wait for its release in the store.
func herd[TOut any](t *testing.T, n int, mem storeapi.Store, hs lockmw.Handlers[event, TOut], opts ...lockmw.Option) ([]TOut, []error, int32) {
	t.Helper()
	ws := &watchStore{Store: mem, refused: make(chan struct{}, n)}
	allWaiting := make(chan struct{})
	var fetches atomic.Int32
	fetch := hs.Fetch
	hs.Fetch = func(ctx context.Context, e event) (TOut, error) {
		fetches.Add(1)
		select {
		case <-allWaiting:
		case <-ctx.Done():
			var zero TOut
			return zero, context.Cause(ctx)
		}
		return fetch(ctx, e)
	}
	h, err := lockmw.NewHandlers(hs, ws, keyOf, append(options(lockmw.WithoutCoalescing()), opts...)...)
	if err != nil {
		t.Fatalf("NewHandlers() = %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	ws.closeAfterRefused(ctx, n-1, allWaiting)
	outs := make([]TOut, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			ictx, icancel := invocationContext(ctx, 30*time.Second, fmt.Sprint("req-", i))
			defer icancel()
			outs[i], errs[i] = h(ictx, event{Key: "EUR-USD"})
		})
	}
	wg.Wait()
	return outs, errs, fetches.Load()
}

func fetchRate(ctx context.Context, e event) (rate, error) {
	info, _ := lockmw.FromContext(ctx)
	return rate{Pair: e.Key, Bid: 1.0842, Fence: info.Fence, Tags: []string{"ecb", "mid"}}, nil
}

// TestInlineAnswerHerd: with no read handler, the waiters of a burst
// return the holder's typed answer from the lock item.
func TestInlineAnswerHerd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 10
		store := lockcore.NewMemoryStore()
		outs, errs, fetches := herd(t, n, store, lockmw.Handlers[event, rate]{Fetch: fetchRate})
		checkSameAnswers(t, outs, errs, fetches)
		it := item(t, store, lockcore.Key{Group: group, ID: "EUR-USD"})
		if !it.Released || it.Result != lockcore.Success || len(it.Answer) == 0 || it.ResultFence != outs[0].Fence {
			t.Errorf("item = %+v; want released with success and an answer, fence %d", it, outs[0].Fence)
		}
	})
}

// checkSameAnswers checks one Fetch and identical, non-zero answers.
func checkSameAnswers(t *testing.T, outs []rate, errs []error, fetches int32) {
	t.Helper()
	for i, err := range errs {
		if err != nil {
			t.Errorf("invocation %d: %v", i, err)
		}
	}
	if fetches != 1 {
		t.Errorf("Fetch ran %d times, want 1", fetches)
	}
	for i, o := range outs {
		if o.Pair != "EUR-USD" || o.Fence <= 0 || o.Bid != outs[0].Bid || o.Fence != outs[0].Fence || strings.Join(o.Tags, ",") != "ecb,mid" {
			t.Errorf("answer %d = %+v, want %+v", i, o, outs[0])
		}
	}
}

// callCounter counts the calls that reach the store.
type callCounter struct {
	storeapi.Store
	calls atomic.Int32
}

func (s *callCounter) Acquire(ctx context.Context, req storeapi.AcquireRequest) (storeapi.Item, error) {
	s.calls.Add(1)
	return s.Store.Acquire(ctx, req)
}

func (s *callCounter) Get(ctx context.Context, key lockcore.Key) (storeapi.Item, bool, error) {
	s.calls.Add(1)
	return s.Store.Get(ctx, key)
}

func (s *callCounter) Renew(ctx context.Context, req storeapi.RenewRequest) (storeapi.Item, error) {
	s.calls.Add(1)
	return s.Store.Renew(ctx, req)
}

func (s *callCounter) Release(ctx context.Context, req storeapi.ReleaseRequest) (storeapi.Item, error) {
	s.calls.Add(1)
	return s.Store.Release(ctx, req)
}

// TestInlineAnswerCoalesced: invocations in one process that follow the
// in-process leader get its inline answer too, with no request of their
// own.
func TestInlineAnswerCoalesced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 5
		store := &callCounter{Store: lockcore.NewMemoryStore()}
		proceed := make(chan struct{})
		var fetches atomic.Int32
		h := lockmw.Wrap(func(ctx context.Context, e event) (rate, error) {
			fetches.Add(1)
			<-proceed
			return fetchRate(ctx, e)
		}, store, keyOf, options()...)
		outs := make([]rate, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		ctx, cancel := invocationContext(t.Context(), time.Minute, "req")
		defer cancel()
		wg.Go(func() { outs[0], errs[0] = h(ctx, event{Key: "EUR-USD"}) })
		synctest.Wait() // the leader holds the lock
		for i := 1; i < n; i++ {
			wg.Go(func() { outs[i], errs[i] = h(ctx, event{Key: "EUR-USD"}) })
		}
		synctest.Wait() // the followers wait for it in the process
		close(proceed)
		wg.Wait()
		checkSameAnswers(t, outs, errs, fetches.Load())
		if got := store.calls.Load(); got != 2 {
			t.Errorf("store requests = %d, want 2 (the leader's acquire and release)", got)
		}
	})
}

// TestInlineAnswerFreshSuccess: with WithFreshSuccess, an invocation that
// arrives after the success returns the answer from its first, refused,
// acquire: one store request.
func TestInlineAnswerFreshSuccess(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &callCounter{Store: lockcore.NewMemoryStore()}
		var fetches atomic.Int32
		h := lockmw.Wrap(func(ctx context.Context, e event) (rate, error) {
			fetches.Add(1)
			return fetchRate(ctx, e)
		}, store, keyOf, options(lockmw.WithLockOptions(lockcore.WithFreshSuccess(time.Minute)))...)
		var got [2]rate
		var calls [2]int32
		for i := range got {
			ctx, cancel := invocationContext(t.Context(), time.Minute, fmt.Sprint("req-", i))
			before := store.calls.Load()
			out, err := h(ctx, event{Key: "k"})
			cancel()
			if err != nil {
				t.Fatalf("invocation %d: %v", i, err)
			}
			got[i], calls[i] = out, store.calls.Load()-before
			time.Sleep(10 * time.Second) // well inside the freshness
		}
		if fetches.Load() != 1 || got[1].Fence != got[0].Fence || got[1].Bid != got[0].Bid {
			t.Errorf("fetches %d, answers %+v; want 1 fetch and the first answer twice", fetches.Load(), got)
		}
		if calls[0] != 2 || calls[1] != 1 {
			t.Errorf("store requests per invocation = %v; want 2 (acquire, release) and then 1 (the refused acquire)", calls)
		}
	})
}

// bytesCodec stores a []byte as it is.
type bytesCodec struct{}

func (bytesCodec) Encode(v []byte) ([]byte, error) { return v, nil }
func (bytesCodec) Decode(b []byte) ([]byte, error) { return append([]byte(nil), b...), nil }

// noise returns n bytes that do not compress.
func noise(n int) []byte {
	b := make([]byte, n)
	r := rand.NewChaCha8([32]byte{7})
	_, _ = r.Read(b)
	return b
}

// TestInlineAnswerSize: an answer up to the maximum, as stored (one format
// byte plus the encoding), is published inline; one byte over, it is not,
// the release still succeeds, and waiters get ErrNoAnswer.
func TestInlineAnswerSize(t *testing.T) {
	const max = 4096
	tests := []struct {
		name       string
		answer     []byte
		wantInline bool
	}{
		{"just under", noise(max - 2), true},
		{"at the maximum", noise(max - 1), true},
		{"over", noise(max), false},
		{"compressible, larger than the maximum", []byte(strings.Repeat(`{"pair":"EUR-USD","bid":1.0842},`, 1000)), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				store := lockcore.NewMemoryStore()
				var logs syncBuffer
				outs, errs, fetches := herd(t, 3, store, lockmw.Handlers[event, []byte]{
					Fetch: func(context.Context, event) ([]byte, error) { return tt.answer, nil },
					Codec: bytesCodec{},
				}, lockmw.WithAnswers(lockmw.Answers{MaxInlineBytes: max}), lockmw.WithTelemetry(lockmw.Telemetry{Logger: slog.New(slog.NewJSONHandler(&logs, nil))}))
				if fetches != 1 {
					t.Errorf("Fetch ran %d times, want 1", fetches)
				}
				var answered, noAnswer int
				for i, err := range errs {
					switch {
					case err == nil && string(outs[i]) == string(tt.answer):
						answered++
					case errors.Is(err, lockmw.ErrNoAnswer):
						noAnswer++
					default:
						t.Errorf("invocation %d: %d bytes, %v", i, len(outs[i]), err)
					}
				}
				it := item(t, store, lockcore.Key{Group: group, ID: "EUR-USD"})
				if !it.Released || it.Result != lockcore.Success {
					t.Errorf("item = %+v; want released with success", it)
				}
				if tt.wantInline {
					if answered != 3 || len(it.Answer) > max || len(it.Answer) == 0 {
						t.Errorf("%d answered, stored %d bytes; want 3 answered and at most %d stored", answered, len(it.Answer), max)
					}
					return
				}
				if answered != 1 || noAnswer != 2 || len(it.Answer) != 0 {
					t.Errorf("%d answered, %d ErrNoAnswer, stored %d bytes; want the holder answered, 2 ErrNoAnswer, none stored", answered, noAnswer, len(it.Answer))
				}
				if !strings.Contains(logs.String(), "answer not published inline") || !strings.Contains(logs.String(), "answer too large") {
					t.Errorf("log has no line about the answer too large to publish:\n%s", logs.String())
				}
			})
		})
	}
}

// failingCodec fails to encode or to decode.
type failingCodec struct{ encode, decode error }

func (c failingCodec) Encode(v rate) ([]byte, error) {
	if c.encode != nil {
		return nil, c.encode
	}
	return lockmw.JSONCodec[rate]{}.Encode(v)
}

func (c failingCodec) Decode(b []byte) (rate, error) {
	if c.decode != nil {
		return rate{}, c.decode
	}
	return lockmw.JSONCodec[rate]{}.Decode(b)
}

// TestInlineAnswerCodecErrors: a codec error is never a failed release;
// the holder answers, the waiters get ErrNoAnswer, or the fallback runs.
func TestInlineAnswerCodecErrors(t *testing.T) {
	codecErr := errors.New("codec: unsupported value")
	tests := []struct {
		name     string
		codec    failingCodec
		fallback bool
	}{
		{"encode error", failingCodec{encode: codecErr}, false},
		{"decode error", failingCodec{decode: codecErr}, false},
		{"encode error with a fallback", failingCodec{encode: codecErr}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				store := lockcore.NewMemoryStore()
				var fallbackErrs atomic.Int32
				hs := lockmw.Handlers[event, rate]{Fetch: fetchRate, Codec: tt.codec}
				if tt.fallback {
					hs.OnFailed = func(ctx context.Context, e event, err error) (rate, error) {
						if errors.Is(err, lockmw.ErrNoAnswer) {
							fallbackErrs.Add(1)
						}
						return rate{Pair: "stale"}, nil
					}
				}
				outs, errs, fetches := herd(t, 3, store, hs)
				if fetches != 1 {
					t.Errorf("Fetch ran %d times, want 1", fetches)
				}
				var holder, waiters int
				for i, err := range errs {
					switch {
					case err == nil && outs[i].Pair == "EUR-USD":
						holder++
					case tt.fallback && err == nil && outs[i].Pair == "stale":
						waiters++
					case !tt.fallback && errors.Is(err, lockmw.ErrNoAnswer):
						waiters++
					default:
						t.Errorf("invocation %d: %+v, %v", i, outs[i], err)
					}
				}
				if holder != 1 || waiters != 2 {
					t.Errorf("holder answers %d, waiters %d; want 1 and 2", holder, waiters)
				}
				if tt.fallback && fallbackErrs.Load() != 2 {
					t.Errorf("fallback saw ErrNoAnswer %d times, want 2", fallbackErrs.Load())
				}
				if it := item(t, store, lockcore.Key{Group: group, ID: "EUR-USD"}); !it.Released || it.Result != lockcore.Success {
					t.Errorf("item = %+v; want released with success", it)
				}
			})
		})
	}
}

// TestInlineAnswerConfig: a result type that JSON cannot encode, without a
// read handler or a codec, is a configuration error; so are a codec next
// to a read handler and a maximum out of range.
func TestInlineAnswerConfig(t *testing.T) {
	store := lockcore.NewMemoryStore()
	type withFunc struct{ F func() }
	tests := []struct {
		name string
		new  func() error
		want string // "" when valid
	}{
		{"channel result", func() error {
			_, err := lockmw.New(func(context.Context, event) (chan int, error) { return nil, nil }, store, keyOf, options()...)
			return err
		}, "cannot be encoded as JSON"},
		{"struct with a function", func() error {
			_, err := lockmw.New(func(context.Context, event) (withFunc, error) { return withFunc{}, nil }, store, keyOf, options()...)
			return err
		}, "cannot be encoded as JSON"},
		{"channel result with a read handler", func() error {
			read := func(context.Context, event) (chan int, error) { return nil, nil }
			_, err := lockmw.NewHandlers(lockmw.Handlers[event, chan int]{Fetch: read, OnReleased: read}, store, keyOf, options()...)
			return err
		}, ""},
		{"codec and read handler", func() error {
			_, err := lockmw.NewHandlers(lockmw.Handlers[event, rate]{Fetch: fetchRate, OnReleased: fetchRate, Codec: lockmw.JSONCodec[rate]{}},
				store, keyOf, options()...)
			return err
		}, "Codec is for inline answers"},
		// The limits of inline answers say nothing to a read handler:
		// given with one, they would be ignored.
		{"inline limits and read handler", func() error {
			_, err := lockmw.NewHandlers(lockmw.Handlers[event, rate]{Fetch: fetchRate, OnReleased: fetchRate},
				store, keyOf, options(lockmw.WithAnswers(lockmw.Answers{MaxInlineBytes: 1024}))...)
			return err
		}, "WithAnswers is for inline answers"},
		{"negative maximum", func() error {
			_, err := lockmw.New(fetchRate, store, keyOf, options(lockmw.WithAnswers(lockmw.Answers{MaxInlineBytes: -1}))...)
			return err
		}, "WithAnswers: MaxInlineBytes"},
		{"maximum over lockcore's", func() error {
			_, err := lockmw.New(fetchRate, store, keyOf, options(lockmw.WithAnswers(lockmw.Answers{MaxInlineBytes: lockcore.MaxAnswerBytes + 1}))...)
			return err
		}, "WithAnswers: MaxInlineBytes"},
		{"maximum at lockcore's", func() error {
			_, err := lockmw.New(fetchRate, store, keyOf, options(lockmw.WithAnswers(lockmw.Answers{MaxInlineBytes: lockcore.MaxAnswerBytes}))...)
			return err
		}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.new()
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("New() = %v, want nil", err)
			case tt.want != "" && (!errors.Is(err, lockcore.ErrConfig) || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("New() = %v, want ErrConfig mentioning %q", err, tt.want)
			}
		})
	}
}

// TestDynoxideInlineHerd: 50 concurrent invocations through Wrap on
// DynamoDB (Dynoxide), with no read handler and no cache: one Fetch, 50
// identical typed answers.
func TestDynoxideInlineHerd(t *testing.T) {
	const n = 50
	store, _ := startDynoxide(t)
	outs, errs, fetches := herd(t, n, store, lockmw.Handlers[event, rate]{Fetch: fetchRate})
	checkSameAnswers(t, outs, errs, fetches)
}

// TestInlineAnswerEveryStore: the inline publication through Wrap on the
// memory store, DynamoStore on Dynoxide, and DynamoStore on dynalite behind
// the proxy that answers refused writes with the item as DynamoDB does:
// waiters get the holder's answer, and a newcomer within the fresh-success
// window gets it from its one refused acquire.
func TestInlineAnswerEveryStore(t *testing.T) {
	stores := []struct {
		name string
		new  func(t *testing.T) storeapi.Store
	}{
		{"memory", func(*testing.T) storeapi.Store { return lockcore.NewMemoryStore() }},
		{"dynoxide", func(t *testing.T) storeapi.Store {
			store, _ := startDynoxide(t)
			return store
		}},
		{"dynalite", func(t *testing.T) storeapi.Store {
			p, err := allold.New(dynalitetest.Start(t).Endpoint(), nil)
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(p)
			t.Cleanup(srv.Close)
			return lockTable(t, dynalite.NewClient(srv.URL))
		}},
	}
	fresh := lockmw.WithLockOptions(lockcore.WithFreshSuccess(time.Minute))
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			store := &callCounter{Store: st.new(t)}
			outs, errs, fetches := herd(t, 5, store, lockmw.Handlers[event, rate]{Fetch: fetchRate}, fresh)
			checkSameAnswers(t, outs, errs, fetches)

			h := lockmw.Wrap(func(context.Context, event) (rate, error) { return rate{}, errors.New("fetched again") },
				store, keyOf, options(fresh)...)
			ctx, cancel := invocationContext(t.Context(), time.Minute, "newcomer")
			defer cancel()
			before := store.calls.Load()
			got, err := h(ctx, event{Key: "EUR-USD"})
			if err != nil || got.Fence != outs[0].Fence || got.Bid != outs[0].Bid {
				t.Errorf("newcomer = %+v, %v; want the holder's answer %+v", got, err, outs[0])
			}
			if n := store.calls.Load() - before; n != 1 {
				t.Errorf("newcomer made %d store requests, want 1 (the refused acquire)", n)
			}
		})
	}
}

// lockTable creates the lock table through client and returns its store.
func lockTable(t *testing.T, client *dynamodb.Client) storeapi.Store {
	t.Helper()
	if err := lockcore.CreateTable(t.Context(), client, "locks"); err != nil {
		t.Fatalf("CreateTable() = %v", err)
	}
	s, err := lockcore.NewDynamoStore(client, "locks")
	if err != nil {
		t.Fatalf("NewDynamoStore() = %v", err)
	}
	return s
}
