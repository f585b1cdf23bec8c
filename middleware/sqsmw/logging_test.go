package sqsmw_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/smithy-go"
	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/lockcore/storeapi"
	"github.com/herdlock/herdlock/middleware/lockmw"
	"github.com/herdlock/herdlock/middleware/sqsmw"
)

// logLines collects JSON log lines.
type logLines struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logLines) lines(t *testing.T) []map[string]any {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for _, s := range strings.Split(strings.TrimSpace(l.buf.String()), "\n") {
		if s == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(s), &m); err != nil {
			t.Fatalf("log line %q: %v", s, err)
		}
		out = append(out, m)
	}
	return out
}

func (l *logLines) text() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func logTo(w io.Writer) sqsmw.Option {
	return sqsmw.WithLockmwOptions(lockmw.WithLockGroup("rates"), lockmw.WithTelemetry(lockmw.Telemetry{EMFWriter: io.Discard,
		Logger: slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))}))
}

func TestBadRecordsAreOneTruncatedWarning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		secret := strings.Repeat("s3cr3t-", 300) // 2.1 KiB a client sent
		key := func(_ context.Context, r events.SQSMessage) (string, error) {
			if strings.Contains(r.Body, "s3cr3t") {
				return "", fmt.Errorf("%w: no pair in %s", lockmw.ErrKey, r.Body) // a careless key function
			}
			return bodyKey(context.Background(), r)
		}
		var logs logLines
		h := must(sqsmw.New((&recorder{}).handle, lockcore.NewMemoryStore(), key, logTo(&logs)))
		ev := batchOf(t, "A", "B", "C")
		ev.Records[0].Body = secret
		ev.Records[2].Body = secret
		ctx, cancel := invocation(30 * time.Second)
		defer cancel()
		resp, _ := h(ctx, ev)
		if got := failedIDs(resp); !slices.Equal(got, []string{"m0", "m2"}) {
			t.Errorf("failed %q, want [m0 m2]", got)
		}
		var warns []map[string]any
		for _, l := range logs.lines(t) {
			if l["level"] == "ERROR" {
				t.Errorf("a client's bad record logged at ERROR: %v", l)
			}
			if strings.HasPrefix(fmt.Sprint(l["msg"]), "sqsmw:") {
				warns = append(warns, l)
			}
		}
		if len(warns) != 1 {
			t.Fatalf("sqsmw lines %v, want one for the batch", warns)
		}
		w := warns[0]
		if w["level"] != "WARN" || w["records"] != float64(2) || !slices.Equal(toStrings(w["messageIds"]), []string{"m0", "m2"}) {
			t.Errorf("line %v, want WARN with records 2 and messageIds [m0 m2]", w)
		}
		if n := len(fmt.Sprint(w["error"])); n > 300 {
			t.Errorf("error logged with %d bytes, want it truncated", n)
		}
		if strings.Count(logs.text(), "s3cr3t") > 40 {
			t.Errorf("the client's body reached the log whole")
		}
	})
}

func toStrings(v any) []string {
	var out []string
	if xs, ok := v.([]any); ok {
		for _, x := range xs {
			out = append(out, fmt.Sprint(x))
		}
	}
	return out
}

// deniedStore refuses every acquire as DynamoDB does for a role without
// the permission; the message names the account and the role.
type deniedStore struct{ storeapi.Store }

const deniedMessage = "User: arn:aws:sts::123456789012:assumed-role/rates-role/fn is not authorized to perform: dynamodb:UpdateItem"

func (deniedStore) Acquire(context.Context, storeapi.AcquireRequest) (storeapi.Item, error) {
	return storeapi.Item{}, &smithy.GenericAPIError{Code: "AccessDeniedException", Message: deniedMessage}
}

func TestStoreErrorsReachTheLogAsCodes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var logs logLines
		h := must(sqsmw.New((&recorder{}).handle, deniedStore{lockcore.NewMemoryStore()}, bodyKey, logTo(&logs)))
		ctx, cancel := invocation(30 * time.Second)
		defer cancel()
		start := time.Now()
		resp, _ := h(ctx, batchOf(t, "A", "B"))
		if got := failedIDs(resp); !slices.Equal(got, []string{"m0", "m1"}) {
			t.Errorf("failed %q, want [m0 m1]", got)
		}
		if took := time.Since(start); took != 0 {
			t.Errorf("answered after %v: a denied write is definite, no time to spend on it", took)
		}
		text := logs.text()
		if strings.Contains(text, "rates-role") || strings.Contains(text, "123456789012") {
			t.Errorf("the store's message reached the log: %s", text)
		}
		if !strings.Contains(text, "AccessDeniedException") {
			t.Errorf("log %s: want the error code", text)
		}
	})
}

func TestHandlerPanicReleasesTheLock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var afterFailure []bool
		var mu sync.Mutex
		panics := true
		h := must(sqsmw.New(func(ctx context.Context, key string, _ []events.SQSMessage) error {
			info, _ := lockmw.FromContext(ctx)
			mu.Lock()
			defer mu.Unlock()
			afterFailure = append(afterFailure, info.AfterFailure)
			if panics {
				panics = false
				panic("test: handler bug")
			}
			return nil
		}, lockcore.NewMemoryStore(), bodyKey, quiet()))
		for i, want := range [][]string{{"m0"}, {}} {
			ctx, cancel := invocation(30 * time.Second)
			start := time.Now()
			resp, err := h(ctx, batchOf(t, "B"))
			cancel()
			if got := failedIDs(resp); err != nil || !slices.Equal(got, want) {
				t.Errorf("batch %d: failed %q, %v; want %q", i, got, err, want)
			}
			if took := time.Since(start); took != 0 {
				t.Errorf("batch %d took %v: want at once, the panicked hold released", i, took)
			}
		}
		if !slices.Equal(afterFailure, []bool{false, true}) {
			t.Errorf("AfterFailure %v, want [false true]: the panic released the lock as failure", afterFailure)
		}
	})
}

func TestKeyFunctionPanicFailsItsRecordOnly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		key := func(ctx context.Context, r events.SQSMessage) (string, error) {
			if r.MessageId == "m1" {
				panic("test: key function bug")
			}
			return bodyKey(ctx, r)
		}
		rec := &recorder{}
		h := must(sqsmw.New(rec.handle, lockcore.NewMemoryStore(), key, quiet()))
		ctx, cancel := invocation(30 * time.Second)
		defer cancel()
		resp, err := h(ctx, batchOf(t, "A", "B", "C"))
		if got := failedIDs(resp); err != nil || !slices.Equal(got, []string{"m1"}) {
			t.Errorf("failed %q, %v; want [m1]", got, err)
		}
		keys := rec.keys()
		slices.Sort(keys)
		if !slices.Equal(keys, []string{"A", "C"}) {
			t.Errorf("handler calls %q, want [A C]", keys)
		}
	})
}

func TestKeyFunctionAWSErrorsReachTheLogAsCodes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// A key function that looks the record's lock id up in a table its
		// role may not read.
		key := func(ctx context.Context, r events.SQSMessage) (string, error) {
			if r.MessageId == "m1" {
				return "", fmt.Errorf("look up the pair: %w", &smithy.OperationError{ServiceID: "DynamoDB", OperationName: "GetItem",
					Err: &smithy.GenericAPIError{Code: "AccessDeniedException", Message: deniedMessage}})
			}
			return bodyKey(ctx, r)
		}
		var logs logLines
		h := must(sqsmw.New((&recorder{}).handle, lockcore.NewMemoryStore(), key, logTo(&logs)))
		ctx, cancel := invocation(30 * time.Second)
		defer cancel()
		resp, _ := h(ctx, batchOf(t, "A", "B"))
		if got := failedIDs(resp); !slices.Equal(got, []string{"m1"}) {
			t.Errorf("failed %q, want [m1]", got)
		}
		text := logs.text()
		if strings.Contains(text, "rates-role") || strings.Contains(text, "123456789012") {
			t.Errorf("the key function's AWS error message reached the log: %s", text)
		}
		if !strings.Contains(text, "AccessDeniedException") {
			t.Errorf("log %s: want the error code", text)
		}
	})
}

func TestKeyFunctionPanicIsLoggedAsTheFunctionsError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		key := func(ctx context.Context, r events.SQSMessage) (string, error) {
			switch r.MessageId {
			case "m1":
				panic("no pair in " + strings.Repeat("s3cr3t-", 300)) // a careless message
			case "m2":
				_ = strings.Fields(r.Body)[1] // a bug: the body has one field
			}
			return bodyKey(ctx, r)
		}
		var logs logLines
		h := must(sqsmw.New((&recorder{}).handle, lockcore.NewMemoryStore(), key, logTo(&logs)))
		ctx, cancel := invocation(30 * time.Second)
		defer cancel()
		resp, _ := h(ctx, batchOf(t, "A", "B", "C"))
		if got := failedIDs(resp); !slices.Equal(got, []string{"m1", "m2"}) {
			t.Errorf("failed %q, want [m1 m2]", got)
		}
		// The function's bug, as lockmw logs a panicking handler: at Error,
		// once, with the panic and where it happened.
		var errs []map[string]any
		for _, l := range logs.lines(t) {
			if l["level"] == "ERROR" {
				errs = append(errs, l)
			}
		}
		if strings.Count(logs.text(), "s3cr3t") > 40 {
			t.Errorf("a panic's message quoting the body reached the log whole")
		}
		if len(errs) != 1 || !strings.Contains(fmt.Sprint(errs[0]["panic"]), "no pair in") ||
			!strings.Contains(fmt.Sprint(errs[0]["stack"]), "TestKeyFunctionPanicIsLoggedAsTheFunctionsError") {
			t.Errorf("error lines %v, want one with the panic and its stack:\n%s", errs, logs.text())
		}
	})
}

func TestKeysWithoutTimeForTheirMinimumAreLogged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Lambda's default timeout, 3 s, with sqsmw's defaults: the 1 s
		// before the batch margin cannot give a key its 3 s minimum.
		var logs logLines
		rec := &recorder{}
		h := must(sqsmw.New(rec.handle, lockcore.NewMemoryStore(), bodyKey, logTo(&logs)))
		for range 2 {
			ctx, cancel := invocation(3 * time.Second)
			resp, _ := h(ctx, batchOf(t, "A", "B", "A"))
			cancel()
			if got := failedIDs(resp); !slices.Equal(got, []string{"m0", "m1", "m2"}) {
				t.Errorf("failed %q, want every record", got)
			}
		}
		if keys := rec.keys(); len(keys) != 0 {
			t.Errorf("handler called for %q, want no call", keys)
		}
		// Every record fails on every receive: the log says why, once a
		// batch, as lockmw says why a handler was not run.
		var lines []map[string]any
		for _, l := range logs.lines(t) {
			if strings.HasPrefix(fmt.Sprint(l["msg"]), "sqsmw:") {
				lines = append(lines, l)
			}
		}
		if len(lines) != 2 {
			t.Fatalf("sqsmw lines %v, want one per batch", lines)
		}
		for _, l := range lines {
			if l["level"] != "WARN" || l["keys"] != float64(2) || l["records"] != float64(3) || l["minKeyTime"] == nil {
				t.Errorf("line %v, want WARN with keys 2, records 3 and the minimum key time", l)
			}
		}
	})
}

func TestAnsweringWithUnfinishedRecordsIsLogged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		stuck := make(chan struct{})
		rec := &recorder{block: map[string]chan struct{}{"B": stuck}}
		var logs logLines
		h := must(sqsmw.New(func(ctx context.Context, key string, records []events.SQSMessage) error {
			return rec.handle(context.WithoutCancel(ctx), key, records) // B ignores its context
		}, lockcore.NewMemoryStore(), bodyKey, logTo(&logs), sqsmw.WithBatchTime(sqsmw.BatchTime{Concurrency: 1})))
		ctx, cancel := invocation(20 * time.Second)
		resp, _ := h(ctx, batchOf(t, "A", "B", "C"))
		text := logs.text() // before B's own line, which comes when it returns
		cancel()
		if got := failedIDs(resp); !slices.Equal(got, []string{"m1", "m2"}) {
			t.Errorf("failed %q, want [m1 m2]", got)
		}
		var lines []map[string]any
		for _, s := range strings.Split(strings.TrimSpace(text), "\n") {
			var l map[string]any
			if json.Unmarshal([]byte(s), &l) == nil && strings.HasPrefix(fmt.Sprint(l["msg"]), "sqsmw:") {
				lines = append(lines, l)
			}
		}
		if len(lines) != 1 || lines[0]["level"] != "WARN" || lines[0]["records"] != float64(2) {
			t.Errorf("sqsmw lines %v, want one WARN saying 2 records were not finished when the batch answered", lines)
		}
		close(stuck)
		synctest.Wait()
	})
}
