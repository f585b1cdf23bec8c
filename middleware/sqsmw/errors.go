package sqsmw

import (
	"fmt"

	"github.com/herdlock/herdlock/middleware/lockmw"
)

// errKeyTooLong means the key function returned an id longer than
// storeapi.MaxPartitionKeyBytes; the record is reported failed and no
// lock is taken for it.
var errKeyTooLong = fmt.Errorf("sqsmw: %w: too long", lockmw.ErrKey)
