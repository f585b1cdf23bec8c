package chaos

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"time"

	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/lockcore/storeapi"
)

// operatorReason is the failure reason of a force-release, as `herdlock
// release` writes it.
const operatorReason = storeapi.OperatorReleaseReason

// operatorAttemptTimeout bounds one attempt of the operator's requests:
// longer than a brownout's delays, as a command line's client has no
// per-attempt timeout of a lock's.
const operatorAttemptTimeout = 2 * time.Second

// operator force-releases held locks in storm phases with the write of
// `herdlock release --revision R` (cmd/herdlock/release.go): a consistent
// read, then one Store.Release as a failure, conditioned on the revision
// read, with the item's failure count, reason operator_release, no
// not-before and not recent. Its requests go through a fault proxy of its
// own, with the intent op-release. It is safe for concurrent use.
type operator struct {
	store   storeapi.Store
	rec     *recorder
	timeout time.Duration // one force-release, read and write
}

// forceRelease force-releases the lock of partition key pk, which slot was
// seen to hold, and records what happened as an EvOperator event.
func (o *operator) forceRelease(slot int, pk string) {
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	ev := Event{T: Mono(), Kind: EvOperator, Worker: slot, Key: pk}
	defer func() {
		ev.T2 = Mono()
		o.rec.event(ev)
	}()
	id, err := url.PathUnescape(strings.TrimPrefix(pk, url.PathEscape(lockGroup)+"/"))
	if err != nil {
		ev.Outcome, ev.Err = "error", err.Error()
		return
	}
	key := lockcore.Key{Group: lockGroup, ID: id}
	it, found, err := o.store.Get(ctx, key)
	switch {
	case err != nil:
		ev.Outcome, ev.Err = "error", err.Error()
		return
	case !found || it.Released:
		// The command would clear a recent failure; the storm
		// force-releases held locks only.
		ev.Outcome = "skipped"
		return
	}
	ev.Rev, ev.Fence = it.Revision, it.Fence
	_, err = o.store.Release(ctx, storeapi.ReleaseRequest{
		Key: key, Revision: it.Revision, NowMs: time.Now().UnixMilli(), Result: lockcore.Failure,
		Failures: it.Failures, FailReason: operatorReason,
	})
	var ce *storeapi.ConditionError
	switch {
	case errors.As(err, &ce):
		ev.Outcome = "refused"
	case err != nil:
		ev.Outcome, ev.Err = "error", err.Error()
	default:
		ev.Outcome = "released"
	}
}
