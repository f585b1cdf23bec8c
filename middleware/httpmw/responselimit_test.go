package httpmw_test

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/middleware/httpmw"
)

// TestAnswerOverTheFrontsResponseLimitIs500: a front cannot send a
// response over its limit: 6 MB for a synchronous invocation (API Gateway,
// function URLs in buffered mode: "Lambda quotas", "Invoke"), 1 MB of
// response JSON for an ALB target ("Lambda functions as targets of an
// Application Load Balancer", Limits). An answer whose response would be
// larger (one that compresses well enough to be published inline, or one
// given by reference) is answered 500 no_answer problem+json by the
// adapter, to the holder and to every request the answer is shared with,
// not left to the front's own opaque 502; an answer within the limit is
// sent as it is.
func TestAnswerOverTheFrontsResponseLimitIs500(t *testing.T) {
	tests := []struct {
		name    string
		size    int
		applies func(shape) bool
		opts    []httpmw.Option
		status  int
	}{
		{"7 MB", 7 << 20, every, nil, 500},
		{"4 MB of text that JSON escapes to 8 MB", 4 << 20, func(s shape) bool { return !albShape(s) },
			[]httpmw.Option{httpmw.WithCodec(quotesCodec{})}, 500},
		{"2 MB behind an ALB", 2 << 20, albShape, nil, 500},
		{"2 MB behind API Gateway or a function URL", 2 << 20, func(s shape) bool { return !albShape(s) }, nil, 200},
	}
	for _, tt := range tests {
		for _, s := range shapes {
			if !tt.applies(s) {
				continue
			}
			t.Run(tt.name+"/"+s.name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					big := strings.Repeat("a", tt.size) // compresses well below the inline maximum
					h := func(context.Context, string) (httpmw.Response[rate], error) { return httpmw.OK(rate{Pair: big}), nil }
					serve := s.wrap(h, lockcore.NewMemoryStore(), append([]httpmw.Option{quiet(), httpmw.WithFreshSuccess(time.Minute)}, tt.opts...)...)
					for i := range 2 { // the holder, then a request answered from the fresh window
						g := request(t, serve, sample(t, s, samplePair), 10*time.Second)
						if g.Status != tt.status {
							t.Fatalf("request %d: status %d, want %d", i, g.Status, tt.status)
						}
						if tt.status == 500 {
							if p := problem(t, g); p.Reason != "no_answer" {
								t.Errorf("request %d: code %q, want %q", i, p.Reason, "no_answer")
							}
						} else if len(g.Body) < tt.size {
							t.Errorf("request %d: %d bytes of body, want the whole answer", i, len(g.Body))
						}
					}
				})
			})
		}
	}
}

// quotesCodec encodes a rate as plain text of as many double quotes as its
// pair has bytes: a body that JSON escaping doubles.
type quotesCodec struct{}

func (quotesCodec) ContentType() string { return "text/plain" }
func (quotesCodec) Encode(v any) ([]byte, error) {
	return []byte(strings.Repeat(`"`, len(v.(rate).Pair))), nil
}
