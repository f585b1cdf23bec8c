package lockcore_test

import (
	"context"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/herdlock/herdlock/internal/dynalite"
	"github.com/herdlock/herdlock/internal/dynoxide"
)

// The Dynoxide server of this test binary: started on first use and shared
// by every test that needs it. It is not closed explicitly: the kernel kills
// it when this process exits, however it exits (see dynoxide.Start).
var sharedDynoxide struct {
	once   sync.Once
	server *dynoxide.Server
	err    error
}

// dynoxideClient returns a client for the shared Dynoxide server, failing t
// (never skipping) when it cannot start.
func dynoxideClient(t testing.TB) *dynamodb.Client {
	t.Helper()
	sharedDynoxide.once.Do(func() {
		sharedDynoxide.server, sharedDynoxide.err = dynoxide.Start(context.Background())
	})
	if sharedDynoxide.err != nil {
		t.Fatalf("dynoxide.Start() = %v", sharedDynoxide.err)
	}
	return dynalite.NewClient(sharedDynoxide.server.Endpoint())
}

// TestDynamoStoreConformanceDynoxide runs the whole suite on Dynoxide, with
// no gap and nothing skipped.
func TestDynamoStoreConformanceDynoxide(t *testing.T) {
	withItem, withoutItem := runCounted(t, dynoxideClient(t), func(*testing.T) {})
	// Dynoxide returns the item with a failed condition (ALL_OLD), as
	// DynamoDB does; only failures on absent items come without one.
	if withItem == 0 || withoutItem == 0 {
		t.Errorf("Dynoxide condition failures: %d with the old item, %d without; want some of each", withItem, withoutItem)
	}
	t.Logf("Dynoxide condition failures: %d with the old item, %d without (absent items)", withItem, withoutItem)
}
