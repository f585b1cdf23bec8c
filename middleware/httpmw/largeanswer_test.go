package httpmw_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/middleware/httpmw"
	"github.com/herdlock/herdlock/middleware/lockmw"
)

// memAnswers is an answer store in memory, as strongly consistent as S3.
type memAnswers struct {
	mu   sync.Mutex // guards data
	data map[string][]byte
}

func (s *memAnswers) PutAnswer(_ context.Context, ref string, data []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.data == nil {
		s.data = map[string][]byte{}
	}
	s.data[ref] = append([]byte(nil), data...)
	return nil
}

func (s *memAnswers) GetAnswer(_ context.Context, ref string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.data[ref]
	if !ok {
		return nil, errors.New("test: NoSuchKey")
	}
	return d, nil
}

// TestLargeAnswerReachesTheKeysOtherRequests: a 600 KB answer that does
// not compress below what a lock item holds reaches a request served
// fresh through the answer store. Without one, that request is told 500
// (the configuration cannot carry the answer), never 503 with a
// Retry-After that meets the same again.
func TestLargeAnswerReachesTheKeysOtherRequests(t *testing.T) {
	raw := make([]byte, 450<<10)
	if _, err := rand.Read(raw); err != nil {
		t.Fatal(err)
	}
	big := base64.StdEncoding.EncodeToString(raw) // 600 KB, ~450 KB compressed
	h := func(context.Context, string) (httpmw.Response[rate], error) { return httpmw.OK(rate{Pair: big}), nil }
	tests := []struct {
		name   string
		opts   []httpmw.Option
		status int
	}{
		{"with an answer store", []httpmw.Option{httpmw.WithLockmw(lockmw.WithAnswerStore(&memAnswers{}))}, 200},
		{"without one", nil, 500},
	}
	for _, tt := range tests {
		for _, s := range shapes {
			t.Run(tt.name+"/"+s.name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					c := &counting{h: h}
					opts := append([]httpmw.Option{quiet(), httpmw.WithFreshness(time.Minute)}, tt.opts...)
					serve := s.wrap(c.handle, lockcore.NewMemoryStore(), opts...)
					first := request(t, serve, sample(t, s, samplePair), 10*time.Second)
					second := request(t, serve, sample(t, s, samplePair), 10*time.Second)
					if first.Status != 200 || len(first.Body) < 600<<10 {
						t.Fatalf("holder: %d with %d bytes, want 200 and the answer", first.Status, len(first.Body))
					}
					if second.Status != tt.status || second.header("Retry-After") != "" {
						t.Errorf("fresh request: %d Retry-After %q, want %d and none", second.Status, second.header("Retry-After"), tt.status)
					}
					if tt.status == 200 && string(second.Body) != string(first.Body) {
						t.Errorf("fresh request: %d bytes, not the holder's answer", len(second.Body))
					}
					if tt.status != 200 {
						if p := problem(t, second); p.Code != httpmw.CodeNoAnswer {
							t.Errorf("code %q, want %q", p.Code, httpmw.CodeNoAnswer)
						}
					}
					wantCalls(t, c.count(), 1)
				})
			})
		}
	}
}
