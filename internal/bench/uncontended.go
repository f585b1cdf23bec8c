package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/lockcore/storeapi"
	"github.com/herdlock/herdlock/middleware/lockmw"
)

// Uncontended is figure 2: the uncontended cost of a lock, as ratios of
// medians to two raw UpdateItem calls, all measured in interleaved rounds
// (in a random order within each round) through one client.
type Uncontended struct {
	Rounds              int     `json:"rounds"`
	TwoUpdateItemsUs    float64 `json:"twoUpdateItemsMedianUs"`
	AcquireReleaseUs    float64 `json:"acquireReleaseMedianUs"`
	WrapUs              float64 `json:"wrapNoopMedianUs"`
	AcquireReleaseRatio float64 `json:"acquireReleaseRatio"`
	WrapRatio           float64 `json:"wrapRatio"`
	AcquireReleaseReqs  float64 `json:"acquireReleaseRequestsPerOp"`
	WrapReqs            float64 `json:"wrapRequestsPerOp"`
	// SameShapeUs is the median of lockcore's own acquire and release
	// UpdateItem inputs, recorded once and replayed through the SDK: the
	// server's cost of the lock's two requests, without the lock.
	SameShapeUs        float64 `json:"sameShapeMedianUs"`
	AcquireReleaseOver float64 `json:"acquireReleaseOverSameShape"`
	WrapOver           float64 `json:"wrapOverSameShape"`
}

// recordingAPI is a lockcore.DynamoAPI that keeps every UpdateItem input.
type recordingAPI struct {
	lockcore.DynamoAPI
	updates []*dynamodb.UpdateItemInput
}

func (r *recordingAPI) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	r.updates = append(r.updates, in)
	return r.DynamoAPI.UpdateItem(ctx, in, optFns...)
}

// PutItem passes through, so that the store keeps announcements as the
// wrapped one does.
func (r *recordingAPI) PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	p, ok := r.DynamoAPI.(StoreAPI)
	if !ok {
		return nil, errors.New("bench: the wrapped client has no PutItem")
	}
	return p.PutItem(ctx, in, optFns...)
}

var _ StoreAPI = (*recordingAPI)(nil)

// recordAcquireRelease returns the UpdateItem inputs of one lockcore
// acquire and release on key. Replayed in order they succeed again and
// again: the acquire's condition holds on a released item, and the release
// carries the acquire's revision.
func recordAcquireRelease(ctx context.Context, a *Actor, key string) ([]*dynamodb.UpdateItemInput, error) {
	rec := &recordingAPI{DynamoAPI: a.API}
	store, err := lockcore.NewDynamoStore(rec, LockTable)
	if err != nil {
		return nil, err
	}
	l, err := newLock(store, key, 0)
	if err != nil {
		return nil, err
	}
	if ok, err := l.Acquire(ctx); err != nil || !ok {
		return nil, fmt.Errorf("lockcore acquire: %v, %v", ok, err)
	}
	if err := l.Release(ctx, lockcore.Success, "ref"); err != nil {
		return nil, fmt.Errorf("lockcore release: %w", err)
	}
	if len(rec.updates) != 2 {
		return nil, fmt.Errorf("recorded %d UpdateItem calls, want 2", len(rec.updates))
	}
	return rec.updates, nil
}

// withRevision returns copies of the recorded acquire and release with
// the revision rev in place of the recorded one: an item is acquired at
// most once per revision (guard D), so each replay needs a revision of its
// own. The copies share everything else with the recording.
func withRevision(shapes []*dynamodb.UpdateItemInput, rev string) []*dynamodb.UpdateItemInput {
	out := make([]*dynamodb.UpdateItemInput, len(shapes))
	for i, in := range shapes {
		c := *in
		c.ExpressionAttributeValues = maps.Clone(in.ExpressionAttributeValues)
		for _, k := range []string{":newRev", ":rev"} {
			if _, ok := c.ExpressionAttributeValues[k]; ok {
				c.ExpressionAttributeValues[k] = &types.AttributeValueMemberS{Value: rev}
			}
		}
		out[i] = &c
	}
	return out
}

// RawUpdateItem returns the UpdateItem input of the reference: a SET of
// one attribute on an item of the lock table, returning ALL_NEW like
// lockcore's writes.
func RawUpdateItem(key string, v int) *dynamodb.UpdateItemInput {
	return &dynamodb.UpdateItemInput{
		TableName:                 aws.String(LockTable),
		Key:                       map[string]types.AttributeValue{storeapi.AttrLockKey: &types.AttributeValueMemberS{Value: key}},
		UpdateExpression:          aws.String("SET #v = :v"),
		ExpressionAttributeNames:  map[string]string{"#v": "v"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":v": &types.AttributeValueMemberN{Value: strconv.Itoa(v)}},
		ReturnValues:              types.ReturnValueAllNew,
	}
}

// NoopWrap returns lockmw.Wrap around a handler that does nothing, on store
// and the static lock id key, with metrics and logs discarded. The
// fresh-success window is off, so every call acquires and releases: with
// lockmw's default, a call within 10 s of the last one is answered from its
// published success by one refused acquire (two requests on a server
// without ALL_OLD, which once hid that).
func NoopWrap(store storeapi.Store, key string) (func(context.Context, struct{}) (struct{}, error), error) {
	return lockmw.New(func(context.Context, struct{}) (struct{}, error) { return struct{}{}, nil },
		store, lockmw.StaticKey[struct{}](key),
		lockmw.WithLockOptions(lockcore.WithFreshSuccess(0)),
		lockmw.WithLockGroup("bench"),
		lockmw.WithHolder(lockmw.Holder{AccountID: 1, AppID: 1}),
		lockmw.WithHolder(lockmw.Holder{Name: func(context.Context) string { return "bench" }}),
		lockmw.WithTelemetry(lockmw.Telemetry{EMFWriter: io.Discard}),
		lockmw.WithTelemetry(lockmw.Telemetry{Logger: discard}),
	)
}

// RunUncontended measures figure 2 over rounds interleaved rounds, after
// warm-up rounds that are not counted.
func RunUncontended(ctx context.Context, env *Env, rounds, warmup int) (Uncontended, error) {
	a := env.NewActor()
	rawKey := keyName("raw")
	lockKey := keyName("uncontended-lockcore")
	wrapKey := keyName("uncontended-lockmw")
	wrap, err := NoopWrap(a.Store, wrapKey)
	if err != nil {
		return Uncontended{}, err
	}
	shapes, err := recordAcquireRelease(ctx, a, keyName("uncontended-same-shape"))
	if err != nil {
		return Uncontended{}, err
	}
	var raw, lock, wrapped, shape []time.Duration
	var lockReqs, wrapReqs int
	n, replay := 0, 0
	tasks := []func() error{
		func() error { // two raw UpdateItem calls
			start := time.Now()
			for range 2 {
				n++
				if _, err := a.Client.UpdateItem(ctx, RawUpdateItem(rawKey, n)); err != nil {
					return fmt.Errorf("raw UpdateItem: %w", err)
				}
			}
			raw = append(raw, time.Since(start))
			return nil
		},
		func() error { // lockcore's own two requests, replayed
			replay++
			ins := withRevision(shapes, fmt.Sprintf("replay-%d", replay))
			start := time.Now()
			for _, in := range ins {
				if _, err := a.Client.UpdateItem(ctx, in); err != nil {
					return fmt.Errorf("replayed UpdateItem: %w", err)
				}
			}
			shape = append(shape, time.Since(start))
			return nil
		},
		func() error { // lockcore acquire + release
			s := a.Counter.Snapshot()
			start := time.Now()
			l, err := newLock(a.Store, lockKey, 0)
			if err != nil {
				return err
			}
			ok, err := l.Acquire(ctx)
			if err != nil || !ok {
				return fmt.Errorf("lockcore acquire: %v, %v", ok, err)
			}
			if err := l.Release(ctx, lockcore.Success, "ref"); err != nil {
				return fmt.Errorf("lockcore release: %w", err)
			}
			lock = append(lock, time.Since(start))
			lockReqs += a.Counter.Since(s).Total
			return nil
		},
		func() error { // lockmw.Wrap around a no-op handler
			s := a.Counter.Snapshot()
			start := time.Now()
			ictx, cancel := context.WithTimeout(ctx, 30*time.Second) // a Lambda deadline
			_, err := wrap(ictx, struct{}{})
			cancel()
			if err != nil {
				return fmt.Errorf("lockmw.Wrap: %w", err)
			}
			wrapped = append(wrapped, time.Since(start))
			wrapReqs += a.Counter.Since(s).Total
			return nil
		},
	}
	for r := range warmup + rounds {
		if r == warmup {
			raw, lock, wrapped, shape, lockReqs, wrapReqs = nil, nil, nil, nil, 0, 0
		}
		for _, i := range rand.Perm(len(tasks)) {
			if err := tasks[i](); err != nil {
				return Uncontended{}, err
			}
		}
	}
	u := Uncontended{
		Rounds:             rounds,
		TwoUpdateItemsUs:   us(median(raw)),
		AcquireReleaseUs:   us(median(lock)),
		WrapUs:             us(median(wrapped)),
		SameShapeUs:        us(median(shape)),
		AcquireReleaseReqs: float64(lockReqs) / float64(rounds),
		WrapReqs:           float64(wrapReqs) / float64(rounds),
	}
	if u.AcquireReleaseReqs != 2 || u.WrapReqs != 2 {
		return Uncontended{}, fmt.Errorf("uncontended: %.2f requests per acquire + release and %.2f per Wrap, want 2 and 2: not the acquire and release the figure compares",
			u.AcquireReleaseReqs, u.WrapReqs)
	}
	u.AcquireReleaseRatio = u.AcquireReleaseUs / u.TwoUpdateItemsUs
	u.WrapRatio = u.WrapUs / u.TwoUpdateItemsUs
	u.AcquireReleaseOver = u.AcquireReleaseUs / u.SameShapeUs
	u.WrapOver = u.WrapUs / u.SameShapeUs
	return u, nil
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// BaselineUncont is figure 2 for the seed's protocol: its acquire plus
// release against two raw UpdateItem calls, interleaved. It runs fewer
// rounds than herdlock's because each acquire sleeps 0-200 ms.
type BaselineUncont struct {
	Rounds              int     `json:"rounds"`
	TwoUpdateItemsUs    float64 `json:"twoUpdateItemsMedianUs"`
	AcquireReleaseUs    float64 `json:"acquireReleaseMedianUs"`
	AcquireReleaseRatio float64 `json:"acquireReleaseRatio"`
	AcquireReleaseReqs  float64 `json:"acquireReleaseRequestsPerOp"`
}

// RunBaselineUncontended measures the baseline's uncontended acquire plus
// release over rounds interleaved rounds.
func RunBaselineUncontended(ctx context.Context, env *Env, rounds int) (BaselineUncont, error) {
	a := env.NewActor()
	rawKey := keyName("raw-baseline")
	key := keyName("uncontended-baseline")
	var raw, lock []time.Duration
	reqs, n := 0, 0
	for range rounds {
		for _, i := range rand.Perm(2) {
			start := time.Now()
			if i == 0 {
				for range 2 {
					n++
					if _, err := a.Client.UpdateItem(ctx, RawUpdateItem(rawKey, n)); err != nil {
						return BaselineUncont{}, fmt.Errorf("raw UpdateItem: %w", err)
					}
				}
				raw = append(raw, time.Since(start))
				continue
			}
			s := a.Counter.Snapshot()
			l, err := newSeedLock(a, false, key, 0)
			if err != nil {
				return BaselineUncont{}, err
			}
			if ok, err := l.Acquire(ctx); err != nil || !ok {
				return BaselineUncont{}, fmt.Errorf("baseline acquire: %v, %v", ok, err)
			}
			if err := l.Release(ctx); err != nil {
				return BaselineUncont{}, fmt.Errorf("baseline release: %w", err)
			}
			lock = append(lock, time.Since(start))
			reqs += a.Counter.Since(s).Total
		}
	}
	b := BaselineUncont{
		Rounds:             rounds,
		TwoUpdateItemsUs:   us(median(raw)),
		AcquireReleaseUs:   us(median(lock)),
		AcquireReleaseReqs: float64(reqs) / float64(rounds),
	}
	b.AcquireReleaseRatio = b.AcquireReleaseUs / b.TwoUpdateItemsUs
	return b, nil
}
