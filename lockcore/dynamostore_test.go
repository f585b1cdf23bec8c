package lockcore_test

import (
	"context"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/herdlock/herdlock/internal/dynalite"
	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/lockcore/storeapi"
	"github.com/herdlock/herdlock/lockcore/storetest"
)

// The dynalite server of this test binary: started on first use and shared
// by every test that needs it. It is not closed explicitly: launch.js exits
// when its standard input closes, which happens when this process exits,
// however it exits. (A TestMain would close it, but the package has one
// test binary shared with other files, and only one TestMain.)
var sharedDynalite struct {
	once   sync.Once
	server *dynalite.Server
	err    error
}

// dynaliteClient returns a client for the shared dynalite server, failing t
// (never skipping) when it cannot start.
func dynaliteClient(t testing.TB) *dynamodb.Client {
	t.Helper()
	sharedDynalite.once.Do(func() {
		sharedDynalite.server, sharedDynalite.err = dynalite.Start(context.Background())
	})
	if sharedDynalite.err != nil {
		t.Fatalf("dynalite.Start() = %v", sharedDynalite.err)
	}
	return dynalite.NewClient(sharedDynalite.server.Endpoint())
}

// runCounted runs the conformance suite on a DynamoStore over client and
// returns how the server reported failed conditions.
func runCounted(t *testing.T, client *dynamodb.Client, skip func(t *testing.T), gaps ...storetest.Gap) (withItem, withoutItem int64) {
	t.Helper()
	if err := lockcore.CreateTable(context.Background(), client, "conformance"); err != nil {
		t.Fatalf("CreateTable() = %v", err)
	}
	counter := &storetest.ConditionCounter{DynamoAPI: client}
	s, err := lockcore.NewDynamoStore(counter, "conformance")
	if err != nil {
		t.Fatalf("NewDynamoStore() = %v", err)
	}
	// The suite's subtests are parallel; t.Run returns when all are done.
	t.Run("suite", func(t *testing.T) {
		storetest.Run(t, func(t *testing.T) storeapi.Store {
			skip(t)
			return s
		}, gaps...)
	})
	return counter.WithItem.Load(), counter.WithoutItem.Load()
}

func TestDynamoStoreConformanceDynalite(t *testing.T) {
	withItem, withoutItem := runCounted(t, dynaliteClient(t), func(*testing.T) {})
	// dynalite 4.0.0 ignores ReturnValuesOnConditionCheckFailure, so every
	// failed condition went through the GetItem fallback. If this fails,
	// dynalite has learnt ALL_OLD: update the gap notes in storetest.
	if withItem != 0 || withoutItem == 0 {
		t.Errorf("dynalite condition failures: %d with the old item, %d without; want 0 with, some without", withItem, withoutItem)
	}
}
