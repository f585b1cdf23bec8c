package sqsmw_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/middleware/lockmw"
	"github.com/herdlock/herdlock/middleware/sqsmw"
)

// worker is a handler whose every key needs work of the given length; it
// returns the cause of its context's end when that comes first, and
// records what each call was given.
type worker struct {
	work time.Duration

	mu    sync.Mutex
	turns []turn
}

// turn is what one handler call was given.
type turn struct {
	key      string
	began    time.Time
	deadline time.Time // its context's deadline
	ended    time.Time
	err      error
}

func (w *worker) handle(ctx context.Context, key string, _ []events.SQSMessage) error {
	tn := turn{key: key, began: time.Now()}
	tn.deadline, _ = ctx.Deadline()
	select {
	case <-time.After(w.work):
	case <-ctx.Done():
		tn.err = context.Cause(ctx)
	}
	tn.ended = time.Now()
	w.mu.Lock()
	w.turns = append(w.turns, tn)
	w.mu.Unlock()
	return tn.err
}

func (w *worker) snapshot() []turn {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.turns)
}

func letters(n int) []string {
	var ks []string
	for i := range n {
		ks = append(ks, fmt.Sprintf("k%02d", i))
	}
	return ks
}

func TestKeySharesKeepNoMarginOfTheirOwn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Ten keys, one at a time, in a 30 s function: each needs 2.5 s,
		// 25 s in all, which fits in the 28 s the batch margin leaves.
		w := &worker{work: 2500 * time.Millisecond}
		h := must(sqsmw.New(w.handle, lockcore.NewMemoryStore(), bodyKey, quiet(), sqsmw.WithBatchTime(sqsmw.BatchTime{Concurrency: 1})))
		ctx, cancel := invocation(30 * time.Second)
		defer cancel()
		resp, _ := h(ctx, batchOf(t, letters(10)...))
		if got := failedIDs(resp); len(got) != 0 {
			t.Errorf("failed %q, want none: every key's work fits in its share", got)
		}
		for _, tn := range w.snapshot() {
			if tn.err != nil {
				t.Errorf("%s cut off after %v: %v", tn.key, tn.ended.Sub(tn.began), tn.err)
			}
		}
	})
}

func TestAKeyHoldsUntilItsContextsDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := &worker{work: time.Hour} // never done: cut off at the share's end
		h := must(sqsmw.New(w.handle, lockcore.NewMemoryStore(), bodyKey, quiet()))
		ctx, cancel := invocation(30 * time.Second)
		defer cancel()
		start := time.Now()
		resp, _ := h(ctx, batchOf(t, "A"))
		if got := failedIDs(resp); !slices.Equal(got, []string{"m0"}) {
			t.Errorf("failed %q, want [m0]", got)
		}
		turns := w.snapshot()
		if len(turns) != 1 {
			t.Fatalf("%d calls, want 1", len(turns))
		}
		tn := turns[0]
		// The share is the whole 28 s the batch margin leaves; lockcore
		// ends the hold its drift allowance earlier.
		share := 30*time.Second - lockmw.DefaultSafetyMargin
		cut := share - time.Duration(float64(share)*0.01) // lockcore's default drift
		if got := tn.deadline.Sub(start); got != share {
			t.Errorf("handler's deadline after %v, want %v (the deadline minus the batch margin, once)", got, share)
		}
		if got := tn.ended.Sub(start); got != cut {
			t.Errorf("handler cut off after %v, want %v (its share less lockcore's drift allowance)", got, cut)
		}
		if !errors.Is(tn.err, lockcore.ErrMaxHoldReached) {
			t.Errorf("cause %v, want lockcore.ErrMaxHoldReached", tn.err)
		}
	})
}

func TestDeadlineIsSharedFairly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := &worker{work: 5 * time.Second}
		h := must(sqsmw.New(w.handle, lockcore.NewMemoryStore(), bodyKey, quiet(), sqsmw.WithBatchTime(sqsmw.BatchTime{Concurrency: 5})))
		ctx, cancel := invocation(60*time.Second + lockmw.DefaultSafetyMargin)
		defer cancel()
		start := time.Now()
		resp, _ := h(ctx, batchOf(t, letters(15)...))
		if len(resp.BatchItemFailures) != 0 {
			t.Fatalf("failed %q", failedIDs(resp))
		}
		// Three rounds of five keys: the first round gets 60/3 s, the
		// second 55/2 s, the third the 50 s left; the handler's context
		// says so.
		turns := w.snapshot()
		slices.SortStableFunc(turns, func(a, b turn) int { return a.began.Compare(b.began) })
		if len(turns) != 15 {
			t.Fatalf("%d calls, want 15", len(turns))
		}
		for i, tn := range turns {
			want := []time.Duration{20 * time.Second, 27500 * time.Millisecond, 50 * time.Second}[i/5]
			if got := tn.deadline.Sub(tn.began); got != want {
				t.Errorf("call %d (%s, began at %v): %v left, want %v", i, tn.key, tn.began.Sub(start), got, want)
			}
		}
	})
}

func TestMinKeyTimeThatDoesNotFitLeavesTheKeyUntried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		store := newKeyRecorder()
		h := must(sqsmw.New(rec.handle, store, bodyKey, quiet(), sqsmw.WithBatchTime(sqsmw.BatchTime{MinKeyTime: 10 * time.Second})))
		ctx, cancel := invocation(8 * time.Second)
		defer cancel()
		start := time.Now()
		resp, _ := h(ctx, batchOf(t, "A", "A"))
		if got := failedIDs(resp); !slices.Equal(got, []string{"m0", "m1"}) {
			t.Errorf("failed %q, want [m0 m1]", got)
		}
		if keys := rec.keys(); len(keys) != 0 {
			t.Errorf("handler called for %q, want no call: 10 s do not fit in the 6 s left", keys)
		}
		if asked := store.asked(); len(asked) != 0 {
			t.Errorf("locks asked %q, want none: the key is not tried, so no failure is published", asked)
		}
		if took := time.Since(start); took != 0 {
			t.Errorf("answered after %v, want at once", took)
		}
	})
}

func TestMinKeyTimeFailsTheKeysThatComeTooLate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := &worker{work: 4500 * time.Millisecond}
		store := newKeyRecorder()
		h := must(sqsmw.New(w.handle, store, bodyKey, quiet(), sqsmw.WithBatchTime(sqsmw.BatchTime{Concurrency: 1, MinKeyTime: 5 * time.Second})))
		// 12 s to share after the 2 s margin: A and B get 5 s each (their
		// 4 s and 3.75 s shares raised to the minimum) and take 4.5 s; at
		// 9 s the 3 s left cannot give C its 5 s.
		ctx, cancel := invocation(14 * time.Second)
		defer cancel()
		resp, _ := h(ctx, batchOf(t, "A", "B", "C"))
		if got := failedIDs(resp); !slices.Equal(got, []string{"m2"}) {
			t.Errorf("failed %q, want [m2]", got)
		}
		if asked := store.asked(); slices.Contains(asked, "C") {
			t.Errorf("locks asked %q: C was tried without its minimum", asked)
		}
		for _, tn := range w.snapshot() {
			if tn.err != nil {
				t.Errorf("%s cut off: %v", tn.key, tn.err)
			}
		}
	})
}

func TestUnfinishedRecordsAreFailedAtTheDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		stuck := make(chan struct{})
		rec := &recorder{block: map[string]chan struct{}{"B": stuck}}
		h := must(sqsmw.New(func(ctx context.Context, key string, records []events.SQSMessage) error {
			// B ignores its context: the batch still answers in time.
			return rec.handle(context.WithoutCancel(ctx), key, records)
		}, lockcore.NewMemoryStore(), bodyKey, quiet(), sqsmw.WithBatchTime(sqsmw.BatchTime{Concurrency: 1})))
		ctx, cancel := invocation(20 * time.Second)
		defer cancel()
		start := time.Now()
		resp, _ := h(ctx, batchOf(t, "A", "B", "C", "A"))
		if got := failedIDs(resp); !slices.Equal(got, []string{"m1", "m2"}) {
			t.Errorf("failed %q, want the stuck key's and the untried key's records [m1 m2]", got)
		}
		if took, want := time.Since(start), 20*time.Second-lockmw.DefaultSafetyMargin/4; took != want {
			t.Errorf("answered after %v, want %v (the deadline minus a quarter of the batch margin)", took, want)
		}
		close(stuck)
		synctest.Wait()
	})
}

func TestASlowKeyFunctionStillLetsTheBatchAnswerInTime(t *testing.T) {
	tests := []struct {
		name string
		// lookUp is how the key function of m1 waits for its lookup.
		lookUp func(ctx context.Context, stuck <-chan struct{})
	}{
		{"it ends with its context", func(ctx context.Context, stuck <-chan struct{}) {
			select {
			case <-stuck:
			case <-ctx.Done():
			}
		}},
		{"it ignores its context", func(_ context.Context, stuck <-chan struct{}) { <-stuck }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				stuck := make(chan struct{})
				key := func(ctx context.Context, r events.SQSMessage) (string, error) {
					if r.MessageId == "m1" {
						tt.lookUp(ctx, stuck) // an upstream that does not answer
						if err := ctx.Err(); err != nil {
							return "", err
						}
					}
					return bodyKey(ctx, r)
				}
				var logs logLines
				h := must(sqsmw.New((&recorder{}).handle, lockcore.NewMemoryStore(), key, logTo(&logs)))
				ctx, cancel := invocation(20 * time.Second)
				defer cancel()
				start := time.Now()
				resp, _ := h(ctx, batchOf(t, "A", "B", "C"))
				if !strings.Contains(logs.text(), `"msg":"sqsmw:`) {
					t.Errorf("no sqsmw line says why every record failed:\n%s", logs.text())
				}
				if took, limit := time.Since(start), 20*time.Second-lockmw.DefaultSafetyMargin/4; took > limit {
					t.Errorf("answered after %v, past %v (the deadline minus a quarter of the batch margin)", took, limit)
				}
				if got := failedIDs(resp); !slices.Equal(got, []string{"m0", "m1", "m2"}) {
					t.Errorf("failed %q, want every record: no time was left for any key", got)
				}
				close(stuck)
				synctest.Wait()
			})
		})
	}
}

func TestALongShareIsHeldWhole(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Lambda's longest timeout: the share of a batch of one key, 14m58s,
		// is longer than lockcore's default maximum hold, 5 min.
		var deadline, ended time.Time
		h := must(sqsmw.New(func(ctx context.Context, _ string, _ []events.SQSMessage) error {
			deadline, _ = ctx.Deadline() // a handler plans its work by it
			<-ctx.Done()
			ended = time.Now()
			return nil
		}, lockcore.NewMemoryStore(), bodyKey, quiet()))
		ctx, cancel := invocation(15 * time.Minute)
		defer cancel()
		start := time.Now()
		_, _ = h(ctx, batchOf(t, "A"))
		share := 15*time.Minute - lockmw.DefaultSafetyMargin
		if got := deadline.Sub(start); got != share {
			t.Errorf("the handler's deadline was %v after the start, want its share %v", got, share)
		}
		// lockcore ends a hold early by its drift allowance, 1 %, and no more.
		if got, want := ended.Sub(start), share-share/100; got != want {
			t.Errorf("the handler's context ended %v after the start, want %v: the share held whole", got, want)
		}
	})
}
