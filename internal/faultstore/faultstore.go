// Package faultstore has stores for tests that fail as a table in
// trouble does, around any storeapi.Store.
package faultstore

import (
	"context"

	"github.com/herdlock/herdlock/lockcore/storeapi"
)

// UnansweredReleases is a store whose releases never answer: each returns
// when its context ends, not applied, as a hung table's do. Every other
// call goes to the store it wraps.
type UnansweredReleases struct{ storeapi.Store }

// Release waits for ctx to end and returns its error.
func (UnansweredReleases) Release(ctx context.Context, _ storeapi.ReleaseRequest) (storeapi.Item, error) {
	<-ctx.Done()
	return storeapi.Item{}, ctx.Err()
}
