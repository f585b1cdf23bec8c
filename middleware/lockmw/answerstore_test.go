package lockmw_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/middleware/lockmw"
)

// memAnswers is an answer store in memory, as strongly consistent as S3:
// a get after a put returns what was put. tamper replaces what a get
// returns; failPut and failGet make the calls fail, as a denied or
// throttled bucket does.
type memAnswers struct {
	mu      sync.Mutex // guards the fields
	data    map[string][]byte
	puts    int
	tamper  []byte
	failPut error
	failGet error
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
	if _, ok := s.data[ref]; ok {
		return errors.New("test: ref written twice")
	}
	s.data[ref] = append([]byte(nil), data...)
	s.puts++
	return nil
}

func (s *memAnswers) GetAnswer(_ context.Context, ref string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failGet != nil {
		return nil, s.failGet
	}
	if s.tamper != nil {
		return s.tamper, nil
	}
	d, ok := s.data[ref]
	if !ok {
		return nil, errors.New("test: NoSuchKey")
	}
	return d, nil
}

// TestAnswerOverTheInlineMaximumGoesByReference: a 500 KB answer that
// does not compress (over the inline maximum and what a DynamoDB item
// holds) reaches every waiter through the answer store; the lock item
// carries a reference of a few dozen bytes. Without the store, or when the
// store fails or returns other bytes, the waiters get ErrNoAnswer and the
// holder's line says why at Error level.
func TestAnswerOverTheInlineMaximumGoesByReference(t *testing.T) {
	big := noise(500 << 10)
	tests := []struct {
		name       string
		answers    *memAnswers // nil: no Answers.Store
		wantShared bool
		wantLog    string
	}{
		{"by reference", &memAnswers{}, true, ""},
		{"no answer store", nil, false, "give Answers.Store"},
		{"the store refuses the put", &memAnswers{failPut: errors.New("AccessDenied")}, false, "answer store: put"},
		{"the store fails the get", &memAnswers{failGet: errors.New("SlowDown")}, false, ""},
		{"the store returns other bytes", &memAnswers{tamper: []byte("other")}, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				store := lockcore.NewMemoryStore()
				var logs syncBuffer
				opts := []lockmw.Option{lockmw.WithTelemetry(lockmw.Telemetry{Logger: slog.New(slog.NewJSONHandler(&logs, nil))})}
				if tt.answers != nil {
					opts = append(opts, lockmw.WithAnswers(lockmw.Answers{Store: tt.answers}))
				}
				outs, errs, fetches := herd(t, 3, store, lockmw.Handlers[event, []byte]{
					Fetch: func(context.Context, event) ([]byte, error) { return big, nil },
					Codec: bytesCodec{},
				}, opts...)
				if fetches != 1 {
					t.Errorf("Fetch ran %d times, want 1", fetches)
				}
				var answered, noAnswer int
				for i, err := range errs {
					switch {
					case err == nil && string(outs[i]) == string(big):
						answered++
					case errors.Is(err, lockmw.ErrNoAnswer):
						noAnswer++
					default:
						t.Errorf("invocation %d: %d bytes, %v", i, len(outs[i]), err)
					}
				}
				want := 1
				if tt.wantShared {
					want = 3
				}
				if answered != want || noAnswer != 3-want {
					t.Errorf("%d answered, %d ErrNoAnswer; want %d answered", answered, noAnswer, want)
				}
				if it := item(t, store, lockcore.Key{Group: group, ID: "EUR-USD"}); len(it.Answer) > 200 {
					t.Errorf("the lock item carries %d answer bytes, want a reference of at most 200", len(it.Answer))
				}
				if tt.wantLog != "" && (!strings.Contains(logs.String(), tt.wantLog) || !strings.Contains(logs.String(), `"level":"ERROR"`)) {
					t.Errorf("log has no Error line with %q:\n%s", tt.wantLog, logs.String())
				}
			})
		})
	}
}
