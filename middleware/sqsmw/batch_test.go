package sqsmw_test

import (
	"context"
	"errors"
	"github.com/herdlock/herdlock/lockcore/storeapi"
	"io"
	"log/slog"
	"slices"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/middleware/lockmw"
	"github.com/herdlock/herdlock/middleware/sqsmw"
)

var errUpstream = errors.New("test: upstream 503")

func TestSampleBatchGroupsByKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		h := must(sqsmw.New(rec.handle, lockcore.NewMemoryStore(), bodyKey, quiet()))
		ev := loadEvent(t, "sqs-standard-batch.json")
		ctx, cancel := invocation(30 * time.Second)
		defer cancel()
		resp, err := h(ctx, ev)
		if err != nil || len(resp.BatchItemFailures) != 0 {
			t.Fatalf("response %+v, %v; want no failures", resp, err)
		}
		calls := rec.snapshot()
		slices.SortFunc(calls, func(a, b call) int { return compare(a.key, b.key) })
		if len(calls) != 2 || calls[0].key != "EURUSD" || !slices.Equal(calls[0].ids, []string{ev.Records[0].MessageId, ev.Records[2].MessageId}) ||
			calls[1].key != "GBPUSD" || !slices.Equal(calls[1].ids, []string{ev.Records[1].MessageId}) {
			t.Errorf("calls %+v, want EURUSD with records 0 and 2, GBPUSD with record 1", calls)
		}
	})
}

func compare(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func TestFailingKeyFailsExactlyItsRecords(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{fail: map[string]error{"GBPUSD": errUpstream}}
		h := must(sqsmw.New(rec.handle, lockcore.NewMemoryStore(), bodyKey, quiet()))
		ev := batchOf(t, "EURUSD", "GBPUSD", "USDJPY", "GBPUSD", "EURUSD", "USDJPY", "GBPUSD", "EURUSD", "USDJPY", "EURUSD")
		ctx, cancel := invocation(30 * time.Second)
		defer cancel()
		resp, _ := h(ctx, ev)
		if got, want := failedIDs(resp), []string{"m1", "m3", "m6"}; !slices.Equal(got, want) {
			t.Errorf("failed %q, want %q", got, want)
		}
		keys := rec.keys()
		slices.Sort(keys)
		if want := []string{"EURUSD", "GBPUSD", "USDJPY"}; !slices.Equal(keys, want) {
			t.Errorf("handler calls %q, want one per key %q", keys, want)
		}
	})
}

func TestSharedFailureFailsTheNextBatchWithoutACall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{fail: map[string]error{"GBPUSD": errUpstream}}
		h := must(sqsmw.New(rec.handle, lockcore.NewMemoryStore(), bodyKey, quiet(lockcore.WithFailureEpisode(lockcore.FailureEpisode{MaxAttempts: 1}))))
		// The first batch's failure exhausts the episode: it is held back
		// for the failure window (the 6 s lease), longer than the later
		// batches can wait, so they fail the key without calling.
		for i := range 3 {
			timeout := 5 * time.Second
			if i == 0 {
				timeout = 30 * time.Second
			}
			ctx, cancel := invocation(timeout)
			resp, _ := h(ctx, batchOf(t, "GBPUSD", "EURUSD"))
			cancel()
			if got := failedIDs(resp); !slices.Equal(got, []string{"m0"}) {
				t.Errorf("failed %q, want [m0]", got)
			}
		}
		if n := countKey(rec.keys(), "GBPUSD"); n != 1 {
			t.Errorf("GBPUSD handler calls %d over 3 batches with FailureEpisode.MaxAttempts 1, want 1", n)
		}
	})
}

func countKey(keys []string, k string) int {
	n := 0
	for _, x := range keys {
		if x == k {
			n++
		}
	}
	return n
}

func TestConcurrentBatchesCoalesce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gate := make(chan struct{})
		rec := &recorder{block: map[string]chan struct{}{"EURUSD": gate}}
		h := must(sqsmw.New(rec.handle, lockcore.NewMemoryStore(), bodyKey, quiet()))
		resps := make([]events.SQSEventResponse, 5)
		done := make(chan struct{})
		for i := range resps {
			go func() {
				defer func() { done <- struct{}{} }()
				ctx, cancel := invocation(30 * time.Second)
				defer cancel()
				resps[i], _ = h(ctx, batchOf(t, "EURUSD", "EURUSD"))
			}()
		}
		synctest.Wait()
		close(gate)
		for range resps {
			<-done
		}
		for i, r := range resps {
			if len(r.BatchItemFailures) != 0 {
				t.Errorf("batch %d failed %q", i, failedIDs(r))
			}
		}
		if n := len(rec.keys()); n != 1 {
			t.Errorf("handler calls %d for 5 concurrent batches of one key, want 1", n)
		}
	})
}

func TestFIFOFailsTheRestOfAGroup(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{fail: map[string]error{"EURGBP": errUpstream}}
		h := must(sqsmw.New(rec.handle, lockcore.NewMemoryStore(), bodyKey, quiet()))
		ev := loadEvent(t, "sqs-fifo-batch.json") // eur: EURUSD, EURGBP, EURJPY; gbp: GBPUSD
		ctx, cancel := invocation(30 * time.Second)
		defer cancel()
		resp, _ := h(ctx, ev)
		want := []string{ev.Records[1].MessageId, ev.Records[3].MessageId}
		if got := failedIDs(resp); !slices.Equal(got, want) {
			t.Errorf("failed %q, want EURGBP's record and the EURJPY one after it %q", got, want)
		}
		keys := rec.keys()
		if slices.Contains(keys, "EURJPY") {
			t.Errorf("EURJPY tried after EURGBP failed in its group: %q", keys)
		}
		if i, j := slices.Index(keys, "EURUSD"), slices.Index(keys, "EURGBP"); i < 0 || j < 0 || i > j {
			t.Errorf("calls %q: want EURUSD before EURGBP, in group order", keys)
		}
		if !slices.Contains(keys, "GBPUSD") {
			t.Errorf("calls %q: the other group's GBPUSD was not tried", keys)
		}
	})
}

func TestFIFOKeepsGroupOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		h := must(sqsmw.New(rec.handle, lockcore.NewMemoryStore(), bodyKey, quiet()))
		pairs := []string{"A1", "B1", "A2", "B2", "A3", "B3", "A4"}
		groups := []string{"a", "b", "a", "b", "a", "b", "a"}
		ctx, cancel := invocation(30 * time.Second)
		defer cancel()
		resp, _ := h(ctx, fifoOf(batchOf(t, pairs...), groups...))
		if len(resp.BatchItemFailures) != 0 {
			t.Fatalf("failed %q", failedIDs(resp))
		}
		var a, b []string
		for _, k := range rec.keys() {
			if k[0] == 'A' {
				a = append(a, k)
			} else {
				b = append(b, k)
			}
		}
		if !slices.Equal(a, []string{"A1", "A2", "A3", "A4"}) || !slices.Equal(b, []string{"B1", "B2", "B3"}) {
			t.Errorf("group a ran %q, b %q; want each in its order", a, b)
		}
	})
}

func TestFIFOKeyErrorFailsTheRestOfItsGroup(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		store := newKeyRecorder()
		h := must(sqsmw.New(rec.handle, store, bodyKey, quiet()))
		ev := fifoOf(batchOf(t, "A1", "", "A3", "B1"), "a", "a", "a", "b")
		ctx, cancel := invocation(30 * time.Second)
		defer cancel()
		resp, _ := h(ctx, ev)
		if got := failedIDs(resp); !slices.Equal(got, []string{"m1", "m2"}) {
			t.Errorf("failed %q, want [m1 m2]", got)
		}
		asked := store.asked()
		slices.Sort(asked)
		if !slices.Equal(asked, []string{"A1", "B1"}) {
			t.Errorf("locks asked %q, want [A1 B1]", asked)
		}
	})
}

func TestHandlerPanicFailsItsKeyOnly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := must(sqsmw.New(func(_ context.Context, key string, _ []events.SQSMessage) error {
			if key == "B" {
				panic("test: handler bug")
			}
			return nil
		}, lockcore.NewMemoryStore(), bodyKey, quiet()))
		ctx, cancel := invocation(30 * time.Second)
		defer cancel()
		resp, _ := h(ctx, batchOf(t, "A", "B", "C"))
		if got := failedIDs(resp); !slices.Equal(got, []string{"m1"}) {
			t.Errorf("failed %q, want [m1]", got)
		}
	})
}

// TestBadConfigurationIsNewsError: New returns a configuration it cannot
// run as an error matching lockcore.ErrConfig, and no handler, before any
// batch: the handler and the key function never run, and the store is
// never asked.
func TestBadConfigurationIsNewsError(t *testing.T) {
	tests := []struct {
		name    string
		noH     bool
		noKey   bool
		noStore bool
		opts    []sqsmw.Option
	}{
		{name: "nil handler", noH: true},
		{name: "nil key function", noKey: true},
		{name: "nil store", noStore: true},
		{name: "nil option", opts: []sqsmw.Option{nil}},
		{name: "negative margin", opts: []sqsmw.Option{sqsmw.WithBatchTime(sqsmw.BatchTime{Margin: -time.Second})}},
		{name: "negative concurrency", opts: []sqsmw.Option{sqsmw.WithBatchTime(sqsmw.BatchTime{Concurrency: -1})}},
		{name: "negative minimum key time", opts: []sqsmw.Option{sqsmw.WithBatchTime(sqsmw.BatchTime{MinKeyTime: -time.Second})}},
		{name: "blank lock group", opts: []sqsmw.Option{sqsmw.WithLockmwOptions(lockmw.WithLockGroup(""))}},
		// The batch's margin is each key's safety margin: one given to
		// lockmw would be overridden, so it is refused.
		{name: "lockmw safety margin", opts: []sqsmw.Option{sqsmw.WithLockmwOptions(lockmw.WithSafetyMargin(time.Second))}},
		{name: "lockmw safety margin of zero", opts: []sqsmw.Option{sqsmw.WithLockmwOptions(lockmw.WithSafetyMargin(0))}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls := 0
			var h sqsmw.Handler = func(context.Context, string, []events.SQSMessage) error { calls++; return nil }
			key := func(context.Context, events.SQSMessage) (string, error) { calls++; return "A", nil }
			counted := &countingStore{Store: lockcore.NewMemoryStore()}
			var store storeapi.Store = counted
			if tt.noH {
				h = nil
			}
			if tt.noKey {
				key = nil
			}
			if tt.noStore {
				store = nil
			}
			f, err := sqsmw.New(h, store, key, append([]sqsmw.Option{quiet()}, tt.opts...)...)
			if !errors.Is(err, lockcore.ErrConfig) {
				t.Errorf("error %v, want one matching lockcore.ErrConfig", err)
			}
			if f != nil {
				t.Error("a handler beside the error")
			}
			if calls != 0 || counted.acquires.Load() != 0 {
				t.Errorf("%d handler or key calls, %d acquires: want none", calls, counted.acquires.Load())
			}
		})
	}
}

// countingStore counts the acquire requests of a store.
type countingStore struct {
	storeapi.Store
	acquires atomic.Int64
}

func (s *countingStore) Acquire(ctx context.Context, req storeapi.AcquireRequest) (storeapi.Item, error) {
	s.acquires.Add(1)
	return s.Store.Acquire(ctx, req)
}

func TestASuccessWithoutAnAnswerStillDoesTheKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := lockcore.NewMemoryStore()
		// Another invocation of the lock group, with a read handler: its
		// holder publishes success without an inline answer, as the
		// example's direct front does.
		direct, err := lockmw.NewHandlers(lockmw.Handlers[string, string]{
			Fetch:      func(context.Context, string) (string, error) { return "fetched", nil },
			OnReleased: func(context.Context, string) (string, error) { return "read", nil },
		}, store, func(_ context.Context, pair string) (string, error) { return pair, nil },
			lockmw.WithLockGroup("rates"), lockmw.WithTelemetry(lockmw.Telemetry{Logger: slog.New(slog.DiscardHandler)}), lockmw.WithTelemetry(lockmw.Telemetry{EMFWriter: io.Discard}))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := invocation(30 * time.Second)
		defer cancel()
		if _, err := direct(ctx, "A"); err != nil {
			t.Fatal(err)
		}
		rec := &recorder{}
		h := must(sqsmw.New(rec.handle, store, bodyKey, quiet()))
		resp, _ := h(ctx, batchOf(t, "A", "B"))
		// A was released with success a moment ago: done without the
		// handler, whatever the holder published with it.
		if got := failedIDs(resp); len(got) != 0 {
			t.Errorf("failed %q, want none", got)
		}
		if keys := rec.keys(); !slices.Equal(keys, []string{"B"}) {
			t.Errorf("handler calls %q, want only B", keys)
		}
	})
}
