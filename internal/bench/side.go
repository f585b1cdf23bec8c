package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/lockcore/storeapi"
)

// Outcome is how one invocation of the herd pattern ended.
type Outcome string

// The outcomes of an invocation.
const (
	Acquired Outcome = "acquired"  // got the lock at once, did the work
	TookOver Outcome = "took-over" // acquired an abandoned lock while waiting
	Released Outcome = "released"  // another holder released; read its result
	Failed   Outcome = "failed"
)

// errDied is returned by a work function whose process dies while holding
// the lock: the invocation must neither renew nor release after it.
var errDied = errors.New("bench: holder died")

// Invocation is what one invocation did.
type Invocation struct {
	Outcome Outcome
	Polls   int
	Err     error
}

// Side is one lock protocol under test.
type Side struct {
	Name string
	// Invoke runs one invocation on key with actor a: acquire, else wait
	// for the release. When it acquires, it calls work and then releases
	// with success, unless work returned errDied.
	Invoke func(ctx context.Context, a *Actor, key string, i int, work func() error) Invocation
}

var discard = slog.New(slog.DiscardHandler)

// newLock returns invocation i's lockcore.Lock on key.
func newLock(store storeapi.Store, key string, i int, opts ...lockcore.Option) (*lockcore.Lock, error) {
	return lockcore.New(store, lockcore.Params{
		LockID:     key,
		LockGroup:  "bench",
		HolderName: fmt.Sprintf("invocation-%d", i),
		AccountID:  1,
		AppID:      1,
	}, append([]lockcore.Option{lockcore.WithLogger(discard)}, opts...)...)
}

// Herdlock returns the herdlock side, a lockcore.Lock per invocation with
// opts.
func Herdlock(name string, opts ...lockcore.Option) Side {
	return Side{Name: name, Invoke: func(ctx context.Context, a *Actor, key string, i int, work func() error) Invocation {
		l, err := newLock(a.Store, key, i, opts...)
		if err != nil {
			return Invocation{Outcome: Failed, Err: err}
		}
		res, err := l.TryAcquireElseWaitForRelease(ctx)
		inv := Invocation{Polls: res.Polls}
		switch res.Outcome {
		case lockcore.Released:
			inv.Outcome = Released
			return inv
		case lockcore.Acquired:
			inv.Outcome = Acquired
			if res.TookOver {
				inv.Outcome = TookOver
			}
		default:
			inv.Outcome, inv.Err = Failed, err
			return inv
		}
		werr := work()
		switch {
		case errors.Is(werr, errDied):
			return inv // a dead process releases nothing
		case werr != nil:
			inv.Err = errors.Join(werr, l.Release(ctx, lockcore.Failure, ""))
		default:
			inv.Err = l.Release(ctx, lockcore.Success, key)
		}
		return inv
	}}
}
