package idempotency_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/middleware/idempotency"
	"github.com/herdlock/herdlock/middleware/lockmw"
)

// memAnswers is an answer store in memory, as strongly consistent as S3,
// that a test can make refuse puts, lose an object or alter one.
type memAnswers struct {
	mu      sync.Mutex // guards the fields below
	data    map[string][]byte
	failPut error
	gets    int
}

func (s *memAnswers) PutAnswer(_ context.Context, ref string, data []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failPut != nil {
		return s.failPut
	}
	if s.data == nil {
		s.data = map[string][]byte{}
	}
	s.data[ref] = append([]byte(nil), data...)
	return nil
}

func (s *memAnswers) GetAnswer(_ context.Context, ref string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gets++
	d, ok := s.data[ref]
	if !ok {
		return nil, errors.New("test: NoSuchKey")
	}
	return append([]byte(nil), d...), nil
}

// change applies f to every stored object (nil from f deletes it).
func (s *memAnswers) change(f func([]byte) []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for ref, d := range s.data {
		if d = f(d); d == nil {
			delete(s.data, ref)
		} else {
			s.data[ref] = d
		}
	}
}

func (s *memAnswers) getCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gets
}

// logBuffer is a log destination safe for concurrent writes.
type logBuffer struct {
	mu sync.Mutex // guards b
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// An answer too large for the record, even compressed, goes by reference
// into the answer store given with lockmw.WithAnswerStore: the holder's
// caller and a duplicate get it. When it cannot be stored (no answer
// store, a put refused) no caller of the key gets an answer that another
// could not: the holder's caller and the duplicate get an error matching
// lockmw.ErrNoAnswer, the handler does not run again, and the holder's log
// line says why at Error level. A reference whose object is missing or
// was altered (its SHA-256 no longer matches) is never replayed.
func TestAnswerOverTheRecordGoesByReference(t *testing.T) {
	big := randomText(2 * lockcore.MaxAnswerBytes) // 600 KB that DEFLATE cannot bring under the record's maximum
	tests := []struct {
		name      string
		answers   *memAnswers // nil: no lockmw.WithAnswerStore
		tamper    func([]byte) []byte
		wantFirst bool // the holder's caller gets the answer
		wantDup   bool // the duplicate gets the answer
		wantLog   string
	}{
		{"by reference", &memAnswers{}, nil, true, true, ""},
		{"no answer store", nil, nil, false, false, "give Answers.Store"},
		{"the answer store refuses the put", &memAnswers{failPut: errors.New("AccessDenied: secret-bucket")}, nil, false, false, "answer store refused"},
		{"the stored object is missing", &memAnswers{}, func([]byte) []byte { return nil }, true, false, ""},
		{"the stored object is altered", &memAnswers{}, func(d []byte) []byte { d[len(d)/2] ^= 1; return d }, true, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var logs logBuffer
				lopts := []lockmw.Option{lockmw.WithTelemetry(lockmw.Telemetry{Logger: slog.New(slog.NewJSONHandler(&logs, nil))})}
				if tt.answers != nil {
					lopts = append(lopts, lockmw.WithAnswers(lockmw.Answers{Store: tt.answers}))
				}
				runs := 0
				h, err := idempotency.New(idempotency.Handlers[order, string]{
					Handle: func(context.Context, order) (string, error) { runs++; return big, nil },
					Key:    orderKey,
				}, lockcore.NewMemoryStore(), quiet(), idempotency.WithLockmw(lopts...))
				if err != nil {
					t.Fatal(err)
				}
				first, ferr := h(t.Context(), order{Key: "k"})
				if tt.tamper != nil {
					tt.answers.change(tt.tamper)
				}
				dup, derr := h(t.Context(), order{Key: "k"})
				for _, c := range []struct {
					who  string
					got  string
					err  error
					want bool
				}{{"holder's caller", first, ferr, tt.wantFirst}, {"duplicate", dup, derr, tt.wantDup}} {
					switch {
					case c.want && (c.err != nil || c.got != big):
						t.Errorf("%s = %d bytes, %v; want the answer", c.who, len(c.got), c.err)
					case !c.want && (!errors.Is(c.err, lockmw.ErrNoAnswer) || c.got != ""):
						t.Errorf("%s = %d bytes, %v; want no answer and lockmw.ErrNoAnswer", c.who, len(c.got), c.err)
					case c.err != nil && strings.Contains(c.err.Error(), "secret-bucket"):
						t.Errorf("%s's error %q carries the answer store's error", c.who, c.err)
					}
				}
				if runs != 1 {
					t.Errorf("handler runs = %d, want 1", runs)
				}
				if tt.wantLog != "" && (!strings.Contains(logs.String(), tt.wantLog) || !strings.Contains(logs.String(), `"level":"ERROR"`)) {
					t.Errorf("log has no Error line with %q:\n%s", tt.wantLog, logs.String())
				}
			})
		})
	}
}

// A duplicate replays an answer stored by reference from the local cache
// once the store gave it: no second read of the answer store. The holder's
// answer, stored by reference, is cached too.
func TestAnswerByReferenceIsCached(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		big := randomText(2 * lockcore.MaxAnswerBytes)
		answers := &memAnswers{}
		cache, err := idempotency.NewCache(10, 4<<20)
		if err != nil {
			t.Fatal(err)
		}
		store := &countingStore{Store: lockcore.NewMemoryStore()}
		h, err := idempotency.New(idempotency.Handlers[order, string]{
			Handle: func(context.Context, order) (string, error) { return big, nil },
			Key:    orderKey,
		}, store, quiet(), idempotency.WithLockmw(lockmw.WithAnswers(lockmw.Answers{Store: answers})), idempotency.WithCache(cache))
		if err != nil {
			t.Fatal(err)
		}
		if got, err := h(t.Context(), order{Key: "k"}); err != nil || got != big {
			t.Fatalf("holder = %d bytes, %v; want the answer", len(got), err)
		}
		calls := store.calls.Load()
		for range 2 {
			if got, err := h(t.Context(), order{Key: "k"}); err != nil || got != big {
				t.Fatalf("duplicate = %d bytes, %v; want the answer", len(got), err)
			}
		}
		if n := store.calls.Load() - calls; n != 0 || answers.getCount() != 0 {
			t.Errorf("duplicates made %d store calls and %d answer store reads, want none (the cache)", n, answers.getCount())
		}
	})
}
