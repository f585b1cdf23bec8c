package httpmw_test

import (
	"context"
	"github.com/herdlock/herdlock/lockcore/storeapi"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	"github.com/herdlock/herdlock/lockcore"
)

// refusingStore is a lock table that answers every call with err, as
// DynamoDB does for a role without permission or a table that is not
// there.
type refusingStore struct {
	storeapi.Store
	err error
}

func (s refusingStore) Acquire(context.Context, storeapi.AcquireRequest) (storeapi.Item, error) {
	return storeapi.Item{}, s.err
}

func (s refusingStore) Get(context.Context, lockcore.Key) (storeapi.Item, bool, error) {
	return storeapi.Item{}, false, s.err
}

// TestStoreErrorsNeverReachClients: a lock table that cannot work (no
// permission, no table) is a misconfiguration: 500 with a generic code and
// no Retry-After, which clients would follow forever. A throttled table
// passes: 503 with a Retry-After. The store's error code and message
// never reach the client.
func TestStoreErrorsNeverReachClients(t *testing.T) {
	tests := []struct {
		name       string
		err        error
		status     int
		code       string
		retryAfter bool
	}{
		{"AccessDeniedException", &smithy.GenericAPIError{Code: "AccessDeniedException", Fault: smithy.FaultClient,
			Message: "User: arn:aws:sts::123456789012:assumed-role/rates is not authorized to perform: dynamodb:UpdateItem"},
			500, "configuration", false},
		{"ResourceNotFoundException", &types.ResourceNotFoundException{Message: aws.String("Requested resource not found: Table: locks not found")},
			500, "configuration", false},
		{"ThrottlingException", &smithy.GenericAPIError{Code: "ThrottlingException", Fault: smithy.FaultClient, Message: "Rate of requests exceeds the allowed throughput."},
			503, "lock_failed", true},
		{"InternalServerError", &types.InternalServerError{Message: aws.String("Internal server error")},
			503, "lock_failed", true},
	}
	for _, tt := range tests {
		for _, s := range shapes {
			t.Run(tt.name+"/"+s.name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					c := &counting{h: okHandler}
					serve := s.wrap(c.handle, refusingStore{Store: lockcore.NewMemoryStore(), err: tt.err}, quiet())
					g := request(t, serve, sample(t, s, samplePair), 10*time.Second)
					if g.Status != tt.status || (g.header("Retry-After") != "") != tt.retryAfter {
						t.Errorf("status %d Retry-After %q, want %d with Retry-After %t", g.Status, g.header("Retry-After"), tt.status, tt.retryAfter)
					}
					if p := problem(t, g); p.Reason != tt.code {
						t.Errorf("code %q, want %q", p.Reason, tt.code)
					}
					for _, leak := range []string{"Exception", "arn:", "Table", "Internal server"} {
						if strings.Contains(string(g.Body), leak) {
							t.Errorf("body %s carries %q", g.Body, leak)
						}
					}
					wantCalls(t, c.count(), 0)
				})
			})
		}
	}
}
