package capacity_test

import (
	"testing"

	"github.com/herdlock/herdlock/internal/dynoxide/dynoxidetest"
)

// Through Dynoxide, which sends x-amz-crc32 and returns the item with a
// failed condition, as DynamoDB does: the model charges and throttles the
// same.
func TestDynoxide(t *testing.T) {
	chargesAndThrottles(t, dynoxidetest.Start(t).Endpoint())
}
