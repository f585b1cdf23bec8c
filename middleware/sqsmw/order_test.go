package sqsmw_test

import (
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/middleware/sqsmw"
)

// fairOf gives each record of a standard-queue batch a MessageGroupId,
// as SQS fair queues do: the group is the tenant.
func fairOf(ev events.SQSEvent, groups ...string) events.SQSEvent {
	for i := range ev.Records {
		ev.Records[i].Attributes = map[string]string{"MessageGroupId": groups[i]}
	}
	return ev
}

// callIDs lists each handler call as its key and record ids, in the order
// the calls began.
func callIDs(calls []call) [][]string {
	var out [][]string
	for _, c := range calls {
		out = append(out, append([]string{c.key}, c.ids...))
	}
	return out
}

func TestFIFOHandsAGroupOverInOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		// Without a fresh-success window, A's second turn in the group
		// runs the handler again.
		h := must(sqsmw.New(rec.handle, lockcore.NewMemoryStore(), bodyKey, quiet(lockcore.WithFreshSuccess(0))))
		ev := fifoOf(batchOf(t, "A", "B", "A"), "g", "g", "g")
		ctx, cancel := invocation(30 * time.Second)
		defer cancel()
		resp, _ := h(ctx, ev)
		if got := failedIDs(resp); len(got) != 0 {
			t.Fatalf("failed %q, want none", got)
		}
		want := [][]string{{"A", "m0"}, {"B", "m1"}, {"A", "m2"}}
		if got := callIDs(rec.snapshot()); !slices.EqualFunc(got, want, slices.Equal) {
			t.Errorf("calls %q, want %q: each record after the one before it in its group", got, want)
		}
	})
}

func TestFIFOFreshSuccessAnswersALaterTurnOfTheKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		h := must(sqsmw.New(rec.handle, lockcore.NewMemoryStore(), bodyKey, quiet()))
		ev := fifoOf(batchOf(t, "A", "B", "A"), "g", "g", "g")
		ctx, cancel := invocation(30 * time.Second)
		defer cancel()
		resp, _ := h(ctx, ev)
		if got := failedIDs(resp); len(got) != 0 {
			t.Fatalf("failed %q, want none", got)
		}
		// m2 is done by A's success, still fresh, after m1 was done; it
		// never reaches the handler before m1.
		want := [][]string{{"A", "m0"}, {"B", "m1"}}
		if got := callIDs(rec.snapshot()); !slices.EqualFunc(got, want, slices.Equal) {
			t.Errorf("calls %q, want %q", got, want)
		}
	})
}

func TestFIFOFailureStopsItsGroupBeforeALaterRecordOfAnEarlierKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{fail: map[string]error{"B": errUpstream}}
		h := must(sqsmw.New(rec.handle, lockcore.NewMemoryStore(), bodyKey, quiet()))
		ev := fifoOf(batchOf(t, "A", "B", "A", "C"), "g", "g", "g", "h")
		ctx, cancel := invocation(30 * time.Second)
		defer cancel()
		resp, _ := h(ctx, ev)
		if got, want := failedIDs(resp), []string{"m1", "m2"}; !slices.Equal(got, want) {
			t.Errorf("failed %q, want B's record and the A after it in the group %q", got, want)
		}
		for _, c := range rec.snapshot() {
			if slices.Contains(c.ids, "m2") {
				t.Errorf("call %s %q handed over m2, which comes after the failed m1 in its group", c.key, c.ids)
			}
		}
	})
}

func TestFIFOAKeyInTwoGroupsWaitsForEachGroup(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{fail: map[string]error{"B": errUpstream}}
		h := must(sqsmw.New(rec.handle, lockcore.NewMemoryStore(), bodyKey, quiet()))
		// A is first in g, and after the failing B in h.
		ev := fifoOf(batchOf(t, "A", "B", "A"), "g", "h", "h")
		ctx, cancel := invocation(30 * time.Second)
		defer cancel()
		resp, _ := h(ctx, ev)
		if got, want := failedIDs(resp), []string{"m1", "m2"}; !slices.Equal(got, want) {
			t.Errorf("failed %q, want %q", got, want)
		}
		for _, c := range rec.snapshot() {
			if slices.Contains(c.ids, "m2") {
				t.Errorf("call %s %q handed over m2 of group h before its group's m1", c.key, c.ids)
			}
		}
	})
}

func TestFairQueueGroupsAreTenantsNotOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{fail: map[string]error{"B": errUpstream}}
		h := must(sqsmw.New(rec.handle, lockcore.NewMemoryStore(), bodyKey, quiet()))
		// A standard queue (no .fifo) whose messages carry a group: a
		// fair queue's tenant.
		ev := fairOf(batchOf(t, "A", "B", "C", "B"), "tenant", "tenant", "tenant", "other")
		ctx, cancel := invocation(30 * time.Second)
		defer cancel()
		resp, _ := h(ctx, ev)
		if got, want := failedIDs(resp), []string{"m1", "m3"}; !slices.Equal(got, want) {
			t.Errorf("failed %q, want only B's records %q", got, want)
		}
		keys := rec.keys()
		slices.Sort(keys)
		if want := []string{"A", "B", "C"}; !slices.Equal(keys, want) {
			t.Errorf("handler calls %q, want one per key %q", keys, want)
		}
	})
}

func TestFairQueueKeysRunAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gate := make(chan struct{})
		rec := &recorder{block: map[string]chan struct{}{"A": gate, "B": gate}}
		h := must(sqsmw.New(rec.handle, lockcore.NewMemoryStore(), bodyKey, quiet()))
		ev := fairOf(batchOf(t, "A", "B"), "tenant", "tenant")
		ctx, cancel := invocation(30 * time.Second)
		defer cancel()
		done := make(chan events.SQSEventResponse)
		go func() {
			resp, _ := h(ctx, ev)
			done <- resp
		}()
		synctest.Wait()
		if n := len(rec.keys()); n != 2 {
			t.Errorf("%d keys of one tenant in the handler at once, want 2 (no order on a standard queue)", n)
		}
		close(gate)
		if got := failedIDs(<-done); len(got) != 0 {
			t.Errorf("failed %q", got)
		}
	})
}

func TestFIFOIsTheQueueARNNotTheGroupAttribute(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{fail: map[string]error{"A": errUpstream}}
		h := must(sqsmw.New(rec.handle, lockcore.NewMemoryStore(), bodyKey, quiet()))
		// A FIFO queue's ARN ends in .fifo; a record whose attributes
		// lack the group is still ordered behind the one before it.
		ev := fifoOf(batchOf(t, "A", "B"), "g", "g")
		delete(ev.Records[1].Attributes, "MessageGroupId")
		delete(ev.Records[0].Attributes, "MessageGroupId")
		ctx, cancel := invocation(30 * time.Second)
		defer cancel()
		resp, _ := h(ctx, ev)
		if got, want := failedIDs(resp), []string{"m0", "m1"}; !slices.Equal(got, want) {
			t.Errorf("failed %q, want %q", got, want)
		}
		if keys := rec.keys(); !slices.Equal(keys, []string{"A"}) {
			t.Errorf("calls %q, want only A", keys)
		}
	})
}
