package lockmw

import (
	"context"
	"time"

	"github.com/herdlock/herdlock/lockcore"
)

// Info describes the lock of one invocation. The handler reads it with
// [FromContext]. It is a value: safe to copy and to share.
type Info struct {
	// Outcome is ACQUIRED (this invocation holds the lock and fetches) or
	// RELEASED (another invocation fetched and published success). The
	// handler never runs for FAILED, except through Handlers.OnFailed.
	Outcome lockcore.Outcome
	// Key is the lock's group and id.
	Key lockcore.Key
	// Fence is this holder's fencing token when ACQUIRED: send it with
	// every write to the protected resource. When RELEASED it is the fence
	// of the holder that published the result.
	Fence int64
	// Revision is this holder's revision when ACQUIRED, else empty.
	Revision string
	// TookOver is true when the lock was ACQUIRED by taking over an
	// abandoned lease: its holder crashed, timed out or did not release.
	TookOver bool
	// AfterFailure is true when the lock was ACQUIRED after its previous
	// holder published a failure: the retry the protocol intends, not a
	// take-over.
	AfterFailure bool
	// ResultRef is the reference the holder published, when RELEASED.
	ResultRef string
	// Announced is true when RELEASED learned the success from a release
	// announcement (see [storeapi.Announcer]) rather than from the lock
	// item: the lock item was throttled by the herd.
	Announced bool
	// Polls is how many times the lock item was read while waiting.
	Polls int
	// Waited is how long the invocation waited, 0 when the first attempt
	// decided.
	Waited time.Duration
	// Coalesced is true when the invocation made no lock request: it
	// waited for another invocation's lock attempt in the same process and
	// is RELEASED with that attempt's result (see [WithoutCoalescing]).
	Coalesced bool
}

type infoKey struct{}

// FromContext returns the [Info] that [Wrap] put in the handler's context,
// and false when ctx carries none. It is safe for concurrent use.
//
// Info.Outcome is RELEASED also in the handler of an invocation that came
// within the fresh-success window after a published success
// ([DefaultFreshSuccess], 10 s, unless WithLockOptions sets
// lockcore.WithFreshSuccess): nothing was fetched for it, it reads what
// that holder published.
func FromContext(ctx context.Context) (Info, bool) {
	if p, ok := ctx.Value(infoKey{}).(*Info); ok {
		return *p, true
	}
	return Info{}, false
}

func withInfo(ctx context.Context, info *Info) context.Context {
	return context.WithValue(ctx, infoKey{}, info)
}
