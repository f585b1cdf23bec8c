package lockmw_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/herdlock/herdlock/internal/dynalite"
	"github.com/herdlock/herdlock/internal/dynoxide/dynoxidetest"
	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/middleware/lockmw"
)

// With WithTableCheck, New checks the store's table on Dynoxide once and
// returns a configuration error naming what is wrong: a missing table, a
// table without TTL on lockcore.AttrTTL, a store that cannot check. A lock
// table passes, and without the option New makes no such call.
func TestNewWithTableCheck(t *testing.T) {
	srv := dynoxidetest.Start(t)
	client := dynalite.NewClient(srv.Endpoint())
	ctx := t.Context()
	for _, table := range []string{"locks", "nottl"} {
		if err := lockcore.CreateTable(ctx, client, table); err != nil {
			t.Fatalf("CreateTable(%s) = %v", table, err)
		}
	}
	if _, err := client.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{TableName: aws.String("locks"),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String(lockcore.AttrTTL), Enabled: aws.Bool(true)}}); err != nil {
		t.Fatalf("UpdateTimeToLive() = %v", err)
	}
	dynamo := func(table string) lockcore.Store {
		s, err := lockcore.NewDynamoStore(client, table)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	handler := func(context.Context, string) (string, error) { return "", nil }
	key := func(_ context.Context, in string) (string, error) { return in, nil }
	tests := []struct {
		name     string
		store    lockcore.Store
		opts     []lockmw.Option
		wantText string // "": New returns nil
	}{
		{"a lock table", dynamo("locks"), []lockmw.Option{lockmw.WithTableCheck()}, ""},
		{"missing table", dynamo("missing"), []lockmw.Option{lockmw.WithTableCheck()}, "the table does not exist"},
		{"missing table, no check", dynamo("missing"), nil, ""},
		{"TTL off", dynamo("nottl"), []lockmw.Option{lockmw.WithTableCheck()}, "time to live is not enabled"},
		{"a store without CheckTable", lockcore.NewMemoryStore(), []lockmw.Option{lockmw.WithTableCheck()}, "has no CheckTable method"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := append([]lockmw.Option{lockmw.WithRecordAccount(1, 1), lockmw.WithLockGroup("g")}, tt.opts...)
			_, err := lockmw.New(handler, tt.store, key, opts...)
			switch {
			case tt.wantText == "" && err != nil:
				t.Fatalf("New() = %v, want nil", err)
			case tt.wantText != "" && (err == nil || !errors.Is(err, lockmw.ErrConfig) || !strings.Contains(err.Error(), tt.wantText)):
				t.Fatalf("New() = %v; want an ErrConfig naming %q", err, tt.wantText)
			}
		})
	}
}
