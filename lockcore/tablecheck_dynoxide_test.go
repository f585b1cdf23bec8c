package lockcore_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/herdlock/herdlock/internal/capacity"
	"github.com/herdlock/herdlock/internal/dynalite"
	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/lockcore/storeapi"
)

// CheckTable, on Dynoxide, accepts a lock table with TTL on AttrTTL and
// names what is wrong with any other: a missing table, another key schema,
// TTL off or on another attribute (ErrConfig); a role that may not
// describe the table gets the refusal, naming its code only.
func TestCheckTable(t *testing.T) {
	ctx := context.Background()
	dynoxideClient(t) // starts the shared server
	endpoint := sharedDynoxide.server.Endpoint()
	admin := dynalite.NewClient(endpoint)
	create := func(t *testing.T, table, key string, ttlAttr string) {
		t.Helper()
		_, err := admin.CreateTable(ctx, &dynamodb.CreateTableInput{
			TableName:            aws.String(table),
			BillingMode:          types.BillingModePayPerRequest,
			AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String(key), AttributeType: types.ScalarAttributeTypeS}},
			KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String(key), KeyType: types.KeyTypeHash}},
		})
		var inUse *types.ResourceInUseException
		if err != nil && !errors.As(err, &inUse) {
			t.Fatalf("CreateTable(%s) = %v", table, err)
		}
		if ttlAttr == "" {
			return
		}
		if _, err := admin.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{TableName: aws.String(table),
			TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String(ttlAttr), Enabled: aws.Bool(true)}}); err != nil {
			t.Fatalf("UpdateTimeToLive(%s) = %v", table, err)
		}
	}
	tests := []struct {
		name       string
		table      string
		key, ttl   string // the table to create ("" key: none)
		deny       []string
		wantConfig bool
		wantText   string // in the error; "" with wantConfig false: no error
	}{
		{"a lock table", "check-good", storeapi.AttrLockKey, storeapi.AttrTTL, nil, false, ""},
		{"missing table", "check-missing", "", "", nil, true, "does not exist"},
		{"another key schema", "check-key", "id", storeapi.AttrTTL, nil, true, `partition key "lockKey" alone`},
		{"TTL off", "check-nottl", storeapi.AttrLockKey, "", nil, true, "time to live is not enabled"},
		{"TTL on another attribute", "check-otherttl", storeapi.AttrLockKey, "expires", nil, true, `time to live is on "expires"`},
		{"role may not describe", "check-good", storeapi.AttrLockKey, storeapi.AttrTTL, []string{"DescribeTable"}, false, "refused by the store: AccessDeniedException"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.key != "" {
				create(t, tt.table, tt.key, tt.ttl)
			}
			client := dynalite.NewClient(endpoint, func(o *dynamodb.Options) {
				o.HTTPClient = &http.Client{Transport: capacity.Deny(http.DefaultTransport, tt.deny...)}
			})
			store, err := lockcore.NewDynamoStore(client, tt.table)
			if err != nil {
				t.Fatal(err)
			}
			err = store.CheckTable(ctx)
			switch {
			case tt.wantText == "" && err != nil:
				t.Fatalf("CheckTable() = %v, want nil", err)
			case tt.wantText == "":
				return
			case err == nil || !strings.Contains(err.Error(), tt.wantText) || errors.Is(err, lockcore.ErrConfig) != tt.wantConfig:
				t.Fatalf("CheckTable() = %v; want an error containing %q, matching ErrConfig %t", err, tt.wantText, tt.wantConfig)
			case strings.Contains(err.Error(), capacity.DeniedRole):
				t.Errorf("CheckTable() = %v carries the server's message", err)
			}
		})
	}
}
