package bench

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/herdlock/herdlock/internal/seedlock"
)

// seedDB is the seedlock.API of the baseline as the seed's
// DistributedLockDb presumably behaves: a conditional put that fails
// because another invocation got there first is not an error; the lock then
// sees another revision on its re-read and reports "not acquired", and
// TryAcquireElseWaitForRelease waits (the seed's `lockItem.revision !==
// newRevision` branch). With literal set, the failure is returned as an
// error, as package seedlock does on its own, and the invocation FAILS.
type seedDB struct {
	*dynamodb.Client
	literal bool
}

func (d seedDB) PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	out, err := d.Client.PutItem(ctx, in, optFns...)
	var ccf *types.ConditionalCheckFailedException
	if !d.literal && errors.As(err, &ccf) {
		return &dynamodb.PutItemOutput{}, nil
	}
	return out, err
}

// newSeedLock returns invocation i's seedlock.Lock on key through a.
func newSeedLock(a *Actor, literal bool, key string, i int, opts ...seedlock.Option) (*seedlock.Lock, error) {
	return seedlock.New(seedDB{Client: a.Client, literal: literal}, LockTable, seedlock.Params{
		LockID:     key,
		LockGroup:  "bench",
		HolderName: fmt.Sprintf("invocation-%d", i),
		AccountID:  1,
		AppID:      1,
	}, opts...)
}

// Baseline returns the seed's protocol (package seedlock) as a Side. See
// seedDB for literal.
func Baseline(name string, literal bool, opts ...seedlock.Option) Side {
	return Side{Name: name, Invoke: func(ctx context.Context, a *Actor, key string, i int, work func() error) Invocation {
		l, err := newSeedLock(a, literal, key, i, opts...)
		if err != nil {
			return Invocation{Outcome: Failed, Err: err}
		}
		s := a.Counter.Snapshot()
		out, err := l.TryAcquireElseWaitForRelease(ctx)
		d := a.Counter.Since(s)
		// The acquire attempt reads once, and once more after a put.
		acquireReads := 1
		if d.ByOp["PutItem"] > 0 {
			acquireReads = 2
		}
		inv := Invocation{Polls: max(0, d.ByOp["GetItem"]-acquireReads)}
		switch out {
		case seedlock.Released:
			inv.Outcome = Released
			return inv
		case seedlock.Acquired:
			inv.Outcome = Acquired
		default:
			inv.Outcome, inv.Err = Failed, err
			return inv
		}
		werr := work()
		if errors.Is(werr, errDied) {
			return inv
		}
		inv.Err = errors.Join(werr, l.Release(ctx))
		return inv
	}}
}
