package httpmw_test

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/middleware/httpmw"
)

// csvCodec writes a rate as one CSV line.
type csvCodec struct{}

func (csvCodec) ContentType() string { return "text/csv; charset=utf-8" }
func (csvCodec) Encode(v any) ([]byte, error) {
	r := v.(rate)
	return fmt.Appendf(nil, "%s,%g\n", r.Pair, r.Bid), nil
}

// binCodec writes bytes no front door passes as text.
type binCodec struct{}

func (binCodec) ContentType() string        { return "application/octet-stream" }
func (binCodec) Encode(any) ([]byte, error) { return []byte{0, 1, 2, 0xff}, nil }

// failCodec cannot encode anything.
type failCodec struct{}

func (failCodec) ContentType() string { return "application/json" }
func (failCodec) Encode(any) ([]byte, error) {
	return nil, fmt.Errorf("cannot encode rates.example s3cr3t")
}

func TestCodecSetsBodyAndContentType(t *testing.T) {
	cases := []struct {
		name   string
		codec  httpmw.BodyCodec
		status int
		ct     string
		body   string
	}{
		{"text", csvCodec{}, 200, "text/csv; charset=utf-8", "EURUSD,1.1\n"},
		{"binary", binCodec{}, 200, "application/octet-stream", "\x00\x01\x02\xff"},
		{"failing", failCodec{}, 502, "application/problem+json", ""},
	}
	for _, s := range shapes {
		for _, tc := range cases {
			t.Run(s.name+"/"+tc.name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					serve := s.wrap(okHandler, lockcore.NewMemoryStore(), quiet(), httpmw.WithCodec(tc.codec))
					for i := range 2 { // the holder, then a fresh success
						g := request(t, serve, sample(t, s, samplePair), 10*time.Second)
						if g.Status != tc.status || g.header("Content-Type") != tc.ct {
							t.Fatalf("request %d: %d %q, want %d %q", i, g.Status, g.header("Content-Type"), tc.status, tc.ct)
						}
						if tc.body != "" && string(g.Body) != tc.body {
							t.Errorf("request %d: body %q, want %q", i, g.Body, tc.body)
						}
						if tc.status != 200 {
							if p := problem(t, g); p.Reason != "body_encoding" {
								t.Errorf("code %q, want body_encoding", p.Reason)
							}
						}
					}
				})
			})
		}
	}
}

func TestInvalidHandlerStatusIs502(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := shapes[1]
		h := func(context.Context, string) (httpmw.Response[rate], error) {
			return httpmw.Response[rate]{Status: 42}, nil
		}
		g := request(t, s.wrap(h, lockcore.NewMemoryStore(), quiet()), sample(t, s, samplePair), 10*time.Second)
		if g.Status != 502 || problem(t, g).Reason != "bad_status" {
			t.Errorf("status %d body %s, want 502 bad_status", g.Status, g.Body)
		}
	})
}
