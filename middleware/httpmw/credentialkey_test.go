package httpmw_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/herdlock/herdlock/middleware/httpmw"
	"github.com/herdlock/herdlock/middleware/lockmw"
)

// TestCredentialKeyNeverReachesLogsOrTheLockTable: a key taken from a
// header that carries credentials (Authorization, Cookie, API Gateway's
// x-api-key), the way to give
// each user an answer of their own, keeps users apart (one user's answer
// never answers another) and the credential itself out of the log lines
// and the lock table's items, which the operator's tools list: the lock id
// is a digest of it.
func TestCredentialKeyNeverReachesLogsOrTheLockTable(t *testing.T) {
	const token = "Bearer eyJhbGciOiJIUzI1NiJ9.c2Vzc2lvbg.s3cr3tSignature"
	tests := []struct {
		header string
		value  string
	}{
		{"Authorization", token},
		{"Cookie", "session=s3cr3tSession; theme=dark"},
		{"X-Api-Key", "s3cr3tApiKey0123456789"},
	}
	for _, tt := range tests {
		t.Run(tt.header, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var logs syncBuffer
				store := newKeyRecorder()
				h := func(_ context.Context, r events.APIGatewayProxyRequest) (httpmw.Response[rate], error) {
					if r.Headers[tt.header] == tt.value {
						return httpmw.Response[rate]{}, errors.New("upstream refused")
					}
					return httpmw.OK(rate{Pair: "the other user's"}), nil
				}
				serve := httpmw.WrapREST(h, store, httpmw.Header[events.APIGatewayProxyRequest](tt.header), quiet(),
					httpmw.WithLockmw(lockmw.WithTelemetry(lockmw.Telemetry{Logger: slog.New(slog.NewJSONHandler(&logs, nil))})), httpmw.WithFreshness(time.Minute))
				ctx, cancel := invocation(10 * time.Second)
				defer cancel()
				other, _ := serve(ctx, events.APIGatewayProxyRequest{HTTPMethod: http.MethodGet, Headers: map[string]string{tt.header: "another user"}})
				resp, _ := serve(ctx, events.APIGatewayProxyRequest{HTTPMethod: http.MethodGet, Headers: map[string]string{tt.header: tt.value}})
				if other.StatusCode != 200 || resp.StatusCode != 502 {
					t.Errorf("statuses %d, %d; want each user's own: 200 and 502", other.StatusCode, resp.StatusCode)
				}
				for _, secret := range []string{"s3cr3t", "eyJ"} {
					if strings.Contains(logs.String(), secret) {
						t.Errorf("the log carries the credential %q:\n%.600s", secret, logs.String())
					}
					for _, id := range store.asked() {
						if strings.Contains(id, secret) {
							t.Errorf("the lock id %q carries the credential", id)
						}
					}
				}
			})
		})
	}
}
