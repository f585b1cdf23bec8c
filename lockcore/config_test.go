package lockcore_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/lockcore/storeapi"
)

// A *DynamoStore from a NewDynamoStore whose error was ignored is nil, but
// as a Store it is not: New must refuse it, not panic at the first call.
func TestNewRefusesTypedNilStore(t *testing.T) {
	var typedNil *lockcore.DynamoStore
	var nilMem *lockcore.MemoryStore
	for _, tt := range []struct {
		name  string
		store storeapi.Store
	}{{"nil", nil}, {"nil *DynamoStore", typedNil}, {"nil *MemoryStore", nilMem}} {
		l, err := lockcore.New(tt.store, lockcore.Params{LockID: "a", LockGroup: "b", HolderName: "c", AccountID: 1, AppID: 1})
		if l != nil || !errors.Is(err, lockcore.ErrConfig) || !strings.Contains(err.Error(), "store") {
			t.Errorf("New(%s store) = %v, %v; want nil and an error matching ErrConfig about the store", tt.name, l, err)
		}
		if err := lockcore.CheckStore(tt.store); !errors.Is(err, lockcore.ErrConfig) {
			t.Errorf("CheckStore(%s) = %v, want ErrConfig", tt.name, err)
		}
	}
	if err := lockcore.CheckStore(lockcore.NewMemoryStore()); err != nil {
		t.Errorf("CheckStore(NewMemoryStore()) = %v, want nil", err)
	}
}

func TestNewConfigErrorsMatchErrConfig(t *testing.T) {
	_, err := lockcore.New(lockcore.NewMemoryStore(), lockcore.Params{})
	if !errors.Is(err, lockcore.ErrConfig) {
		t.Errorf("New(blank params) = %v, want ErrConfig", err)
	}
	_, err = lockcore.New(lockcore.NewMemoryStore(), lockcore.Params{LockID: "a", LockGroup: "b", HolderName: "c", AccountID: 1, AppID: 1},
		lockcore.WithPollInterval(0))
	if !errors.Is(err, lockcore.ErrConfig) {
		t.Errorf("New(WithPollInterval(0)) = %v, want ErrConfig", err)
	}
}

func TestNewDynamoStoreRefusesBadConfig(t *testing.T) {
	client := dynamodb.New(dynamodb.Options{Region: "us-east-1"})
	var nilClient *dynamodb.Client
	for _, tt := range []struct {
		name   string
		client lockcore.DynamoAPI
		table  string
		want   string
	}{
		{"empty table", client, "", "blank table name"},
		{"blank table", client, " \t", "blank table name"},
		{"nil client", nil, "locks", "nil client"},
		{"nil *dynamodb.Client", nilClient, "locks", "nil client"},
	} {
		s, err := lockcore.NewDynamoStore(tt.client, tt.table)
		if s != nil || !errors.Is(err, lockcore.ErrConfig) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("NewDynamoStore(%s) = %v, %v; want nil and ErrConfig naming %q", tt.name, s, err, tt.want)
		}
	}
	if s, err := lockcore.NewDynamoStore(client, "locks"); err != nil || s.Table() != "locks" {
		t.Errorf("NewDynamoStore(client, locks) = %v, %v; want a store on locks", s, err)
	}
}
