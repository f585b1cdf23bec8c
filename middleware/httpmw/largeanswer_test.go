package httpmw_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/smithy-go"
	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/middleware/httpmw"
	"github.com/herdlock/herdlock/middleware/lockmw"
)

// memAnswers is an answer store in memory, as strongly consistent as S3;
// failGet makes every get fail, as a throttled or denied bucket does.
type memAnswers struct {
	mu      sync.Mutex // guards data
	data    map[string][]byte
	failGet error
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
	if s.failGet != nil {
		return nil, s.failGet
	}
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
// Retry-After that meets the same again; a store that fails for a moment
// is 503 with Retry-After, one that refuses is 500. The store's error
// never reaches the client.
func TestLargeAnswerReachesTheKeysOtherRequests(t *testing.T) {
	raw := make([]byte, 450<<10)
	if _, err := rand.Read(raw); err != nil {
		t.Fatal(err)
	}
	big := base64.StdEncoding.EncodeToString(raw) // 600 KB, ~450 KB compressed
	h := func(context.Context, string) (httpmw.Response[rate], error) { return httpmw.OK(rate{Pair: big}), nil }
	tests := []struct {
		name       string
		opts       []httpmw.Option
		status     int
		retryAfter bool
	}{
		{"with an answer store", []httpmw.Option{httpmw.WithLockmw(lockmw.WithAnswers(lockmw.Answers{Store: &memAnswers{}}))}, 200, false},
		{"without one", nil, 500, false},
		{"a throttled answer store", []httpmw.Option{httpmw.WithLockmw(lockmw.WithAnswers(lockmw.Answers{Store: &memAnswers{
			failGet: &smithy.GenericAPIError{Code: "SlowDown", Message: "Please reduce your request rate.", Fault: smithy.FaultServer}}}))}, 503, true},
		{"a denied answer store", []httpmw.Option{httpmw.WithLockmw(lockmw.WithAnswers(lockmw.Answers{Store: &memAnswers{
			failGet: &smithy.GenericAPIError{Code: "AccessDenied", Message: "Access Denied", Fault: smithy.FaultClient}}}))}, 500, false},
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
					if second.Status != tt.status || (second.header("Retry-After") != "") != tt.retryAfter {
						t.Errorf("fresh request: %d Retry-After %q, want %d with Retry-After %t", second.Status, second.header("Retry-After"), tt.status, tt.retryAfter)
					}
					if tt.status == 200 && string(second.Body) != string(first.Body) {
						t.Errorf("fresh request: %d bytes, not the holder's answer", len(second.Body))
					}
					if tt.status != 200 {
						if p := problem(t, second); p.Code != httpmw.CodeNoAnswer {
							t.Errorf("code %q, want %q", p.Code, httpmw.CodeNoAnswer)
						}
						if strings.Contains(string(second.Body), "SlowDown") || strings.Contains(string(second.Body), "Denied") {
							t.Errorf("body %s carries the store's error", second.Body)
						}
					}
					wantCalls(t, c.count(), 1)
				})
			})
		}
	}
}
