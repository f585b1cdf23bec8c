package sqsmw_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/herdlock/herdlock/lockcore/storeapi"
	"github.com/herdlock/herdlock/middleware/sqsmw"
)

func TestMalformedRecordsFailWithoutALock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ev := batchOf(t, "A", "B", "C", "D", "E", "F", "G")
		ev.Records[1].Body = "pair=B"                                                                  // not JSON
		ev.Records[2].Body = `{"pair":""}`                                                             // no key
		ev.Records[3].Body = `{"pair":"` + strings.Repeat("d", storeapi.MaxPartitionKeyBytes+1) + `"}` // too long
		ev.Records[4].Body = `[1,2]`                                                                   // wrong shape
		ev.Records[5].Body = `{"pair":"F"} {"pair":"X"}`                                               // two values
		store := newKeyRecorder()
		rec := &recorder{}
		h := must(sqsmw.New(rec.handle, store, bodyKey, quiet()))
		ctx, cancel := invocation(30 * time.Second)
		defer cancel()
		resp, err := h(ctx, ev)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := failedIDs(resp), []string{"m1", "m2", "m3", "m4", "m5"}; !slices.Equal(got, want) {
			t.Errorf("failed %q, want %q", got, want)
		}
		asked := store.asked()
		slices.Sort(asked)
		if !slices.Equal(asked, []string{"A", "G"}) {
			t.Errorf("locks asked %q, want [A G]", asked)
		}
	})
}

func TestTenThousandRecords(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pairs := make([]string, 10000)
		for i := range pairs {
			pairs[i] = fmt.Sprintf("k%d", i%2500)
		}
		ev := batchOf(t, pairs...)
		for i := 0; i < len(ev.Records); i += 7 {
			ev.Records[i].Body = "{" // malformed
		}
		store := newKeyRecorder()
		rec := &recorder{}
		h := must(sqsmw.New(func(ctx context.Context, key string, records []events.SQSMessage) error {
			time.Sleep(time.Second) // every key takes a second: not all fit in the time
			return rec.handle(ctx, key, records)
		}, store, bodyKey, quiet()))
		ctx, cancel := invocation(60 * time.Second)
		defer cancel()
		resp, err := h(ctx, ev)
		if err != nil {
			t.Fatal(err)
		}
		done := map[string]bool{}
		for _, c := range rec.snapshot() {
			for _, id := range c.ids {
				done[id] = true
			}
		}
		failed := map[string]bool{}
		for _, id := range failedIDs(resp) {
			if failed[id] {
				t.Fatalf("%s reported twice", id)
			}
			failed[id] = true
		}
		for i, r := range ev.Records {
			switch {
			case i%7 == 0 && !failed[r.MessageId]:
				t.Fatalf("malformed record %s not failed", r.MessageId)
			case !failed[r.MessageId] && !done[r.MessageId]:
				t.Fatalf("record %s neither done nor failed: dropped", r.MessageId)
			}
		}
		if len(done) == 0 || len(failed) == len(ev.Records) {
			t.Errorf("done %d, failed %d of %d: want some of each", len(done), len(failed), len(ev.Records))
		}
		for _, id := range store.asked() {
			var n int
			if _, err := fmt.Sscanf(id, "k%d", &n); err != nil || n >= 2500 {
				t.Fatalf("lock asked for %q, not a key of the batch", id)
			}
		}
		synctest.Wait()
	})
}

func FuzzSQSDecoding(f *testing.F) {
	for _, name := range []string{"sqs-standard-batch.json", "sqs-fifo-batch.json"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range []string{`{}`, `{"Records":null}`, `{"Records":[{}]}`, `{"Records":[{"body":"{}"},{"body":"{}"}]}`,
		`{"Records":[{"messageId":"a","body":"{\"pair\":\"x\"}","attributes":{"MessageGroupId":"g"}},{"messageId":"a","body":"{\"pair\":\"x\"}"}]}`,
		`{"Records":[{"messageId":"b","body":"{\"pair\":\" \"}"}]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var ev events.SQSEvent
		if json.Unmarshal(raw, &ev) != nil || len(ev.Records) > 100 {
			return
		}
		ctx, cancel := invocation(30 * time.Second)
		defer cancel()
		keys := map[string]bool{}
		ids := map[string]bool{}
		for _, r := range ev.Records {
			ids[r.MessageId] = true
			if k, err := bodyKey(ctx, r); err == nil {
				keys[strings.TrimSpace(k)] = true
			}
		}
		store := newKeyRecorder()
		resp, err := must(sqsmw.New((&recorder{}).handle, store, bodyKey, quiet()))(ctx, ev)
		if err != nil {
			t.Fatalf("error %v", err)
		}
		for _, fl := range resp.BatchItemFailures {
			if !ids[fl.ItemIdentifier] {
				t.Fatalf("failure %q names no record", fl.ItemIdentifier)
			}
		}
		for _, id := range store.asked() {
			if !keys[id] {
				t.Fatalf("lock asked for %q, not a key of the batch", id)
			}
		}
	})
}
