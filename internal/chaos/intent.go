package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/lockcore/storeapi"
)

// IntentHeader carries a worker's [Intent] on every request it makes to the
// store, so the proxy can record what the library meant and check 5 can
// model that, not the expression that was sent.
const IntentHeader = "X-Harness-Intent"

// Intent is a storeapi.Store call as the library made it.
//
// Op is acquire, renew, release or get as the library called the store,
// or op-release for an operator's force-release (the write of `herdlock
// release`, which the parent makes through the same Store.Release), or
// release-unguarded for the broken holder's write over it
// (VariantStubborn); the proxy refines it from the request it carries: "get" for any GetItem
// (a condition failure's fallback read too), and "renew-beat" for Renew's
// second write, which moves the beat without the lease.
type Intent struct {
	Op         string `json:"op"`
	Key        string `json:"key"`
	Rev        string `json:"rev,omitempty"`
	NowMs      int64  `json:"now,omitempty"`
	LUMs       int64  `json:"lu,omitempty"`
	ExpMs      int64  `json:"exp,omitempty"`
	FenceBase  int64  `json:"base,omitempty"`
	Wall       bool   `json:"wall,omitempty"`
	EpsMs      int64  `json:"eps,omitempty"`
	Obs        bool   `json:"obs,omitempty"`
	ObsRev     string `json:"obsRev,omitempty"`
	ObsBeat    int64  `json:"obsBeat,omitempty"`
	FreshSince int64  `json:"fresh,omitempty"`
	MaxAtt     int64  `json:"maxAtt,omitempty"`
	Result     string `json:"result,omitempty"`
	Failures   int64  `json:"failures,omitempty"`
	NotBefore  int64  `json:"nb,omitempty"`
	RecentTill int64  `json:"recent,omitempty"`
	Reason     string `json:"reason,omitempty"`
	// KeepEpisode: a failure release that leaves the episode as it is.
	KeepEpisode bool `json:"keep,omitempty"`
	// Sent is [Mono] when the worker's client built the request (once per
	// call, before the SDK's retries): when the lock sent it, before the
	// transport and the proxy's scheduling delayed its arrival.
	Sent int64 `json:"sent,omitempty"`
}

type intentKey struct{}

func withIntent(ctx context.Context, in Intent) context.Context {
	return context.WithValue(ctx, intentKey{}, in)
}

// intentMiddleware copies the context's Intent into IntentHeader.
var intentMiddleware = middleware.BuildMiddlewareFunc("chaosIntent",
	func(ctx context.Context, in middleware.BuildInput, next middleware.BuildHandler) (middleware.BuildOutput, middleware.Metadata, error) {
		if it, ok := ctx.Value(intentKey{}).(Intent); ok {
			if req, ok := in.Request.(*smithyhttp.Request); ok {
				it.Sent = Mono()
				b, _ := json.Marshal(it)
				req.Header.Set(IntentHeader, string(b))
			}
		}
		return next.HandleBuild(ctx, in)
	})

// withIntentHeader is a dynamodb option that installs intentMiddleware.
func withIntentHeader(o *dynamodb.Options) {
	o.APIOptions = append(o.APIOptions, func(s *middleware.Stack) error {
		return s.Build.Add(intentMiddleware, middleware.After)
	})
}

// intentStore wraps a storeapi.Store and tags each call's context with its
// Intent. An operator's intentStore tags its releases op-release.
type intentStore struct {
	inner    storeapi.Store
	operator bool
}

func (s intentStore) Acquire(ctx context.Context, req storeapi.AcquireRequest) (storeapi.Item, error) {
	in := Intent{Op: "acquire", Key: storeapi.PartitionKey(req.Key), Rev: req.Revision, NowMs: req.NowMs,
		LUMs: req.LeaseUntilMs, ExpMs: req.ExpiresAtMs, FenceBase: req.FenceBase,
		Wall: req.UseWallClock, EpsMs: req.ClockAllowance.Milliseconds(), FreshSince: req.FreshSuccessSinceMs, MaxAtt: req.MaxAttempts}
	if o := req.Observed; o != nil {
		in.Obs, in.ObsRev, in.ObsBeat = true, o.Revision, o.Beat
	}
	return s.inner.Acquire(withIntent(ctx, in), req)
}

func (s intentStore) Renew(ctx context.Context, req storeapi.RenewRequest) (storeapi.Item, error) {
	in := Intent{Op: "renew", Key: storeapi.PartitionKey(req.Key), Rev: req.Revision, NowMs: req.NowMs, LUMs: req.LeaseUntilMs}
	return s.inner.Renew(withIntent(ctx, in), req)
}

func (s intentStore) Release(ctx context.Context, req storeapi.ReleaseRequest) (storeapi.Item, error) {
	in := Intent{Op: "release", Key: storeapi.PartitionKey(req.Key), Rev: req.Revision, NowMs: req.NowMs, Result: string(req.Result)}
	if s.operator {
		in.Op = "op-release"
	}
	switch {
	case req.Result == lockcore.Failure && req.KeepEpisode:
		in.KeepEpisode = true
	case req.Result == lockcore.Failure:
		in.Failures, in.NotBefore, in.RecentTill, in.Reason = req.Failures, req.NotBeforeMs, req.FailRecentUntilMs, req.FailReason
	}
	return s.inner.Release(withIntent(ctx, in), req)
}

func (s intentStore) Get(ctx context.Context, key lockcore.Key) (storeapi.Item, bool, error) {
	return s.inner.Get(withIntent(ctx, Intent{Op: "get", Key: storeapi.PartitionKey(key)}), key)
}

// Announce and GetAnnouncement pass a waiter's release announcements
// through untagged: announcement items are not lock items, so check 5 has
// no model of them, and check 8 does not count their responses (a waiter
// that returns RELEASED from an announcement must still match a success
// that a response of the lock item showed).
func (s intentStore) Announce(ctx context.Context, a storeapi.Announcement) (bool, error) {
	an, ok := s.inner.(storeapi.Announcer)
	if !ok {
		return false, errors.New("chaos: the store keeps no announcements")
	}
	return an.Announce(ctx, a)
}

func (s intentStore) GetAnnouncement(ctx context.Context, key lockcore.Key, shard int) (storeapi.Announcement, bool, error) {
	an, ok := s.inner.(storeapi.Announcer)
	if !ok {
		return storeapi.Announcement{}, false, errors.New("chaos: the store keeps no announcements")
	}
	return an.GetAnnouncement(ctx, key, shard)
}

// noRevisionStore is the deliberately broken store of the self-test: its
// Renew and Release are conditioned only on the item existing, not on the
// revision, while the intent header still says they are. A late release
// then frees (and publishes over) a successor's lock. Check 5 must see it.
type noRevisionStore struct {
	*lockcore.DynamoStore
	api   *dynamodb.Client
	table string
}

func (s noRevisionStore) update(ctx context.Context, op string, key lockcore.Key, expr string, values map[string]types.AttributeValue, names map[string]string) (storeapi.Item, error) {
	names["#lockKey"] = storeapi.AttrLockKey
	_, err := s.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.table),
		Key:                       map[string]types.AttributeValue{storeapi.AttrLockKey: &types.AttributeValueMemberS{Value: storeapi.PartitionKey(key)}},
		UpdateExpression:          aws.String(expr),
		ConditionExpression:       aws.String("attribute_exists(#lockKey)"),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
	})
	if err != nil {
		return storeapi.Item{}, fmt.Errorf("chaos: broken %s: %w", op, err)
	}
	it, _, err := s.DynamoStore.Get(ctx, key)
	return it, err
}

func (s noRevisionStore) Renew(ctx context.Context, req storeapi.RenewRequest) (storeapi.Item, error) {
	return s.update(ctx, "renew", req.Key, "SET #lu = :lu ADD #beat :one",
		map[string]types.AttributeValue{":lu": num(req.LeaseUntilMs), ":one": num(1)},
		map[string]string{"#lu": storeapi.AttrLeaseUntilMs, "#beat": storeapi.AttrBeat})
}

func (s noRevisionStore) Release(ctx context.Context, req storeapi.ReleaseRequest) (storeapi.Item, error) {
	return s.update(ctx, "release", req.Key, "SET #rel = :t, #result = :r, #resultRef = :ref, #resultFence = #fence",
		map[string]types.AttributeValue{":t": &types.AttributeValueMemberBOOL{Value: true},
			":r": &types.AttributeValueMemberS{Value: string(req.Result)}, ":ref": &types.AttributeValueMemberS{Value: req.ResultRef}},
		map[string]string{"#rel": storeapi.AttrIsReleased, "#result": storeapi.AttrResult,
			"#resultRef": storeapi.AttrResultRef, "#resultFence": storeapi.AttrResultFence, "#fence": storeapi.AttrFence})
}

// noGuardStore is the deliberately broken store of check 6's self-test: its
// Acquire turns the failure guard off (MaxAttempts 0) before the intent is
// recorded, so check 5 sees a consistent history while newcomers take over
// a failure before its not-before and past the episode's attempts.
type noGuardStore struct{ storeapi.Store }

func (s noGuardStore) Acquire(ctx context.Context, req storeapi.AcquireRequest) (storeapi.Item, error) {
	req.MaxAttempts = 0
	return s.Store.Acquire(ctx, req)
}

// stubbornStore is the deliberately broken holder of check 7's self-test:
// when a renewal finds its own revision released (an operator's
// force-release), it publishes its failure over that release at once, as
// a holder that does not stop would, with a release condition that does
// not keep an operator's release (lockcore's before it did); the holder
// does the same when its release fails. Its writes carry their intents
// (release-unguarded), so check 5 sees a consistent history.
type stubbornStore struct {
	storeapi.Store
	api   *dynamodb.Client
	table string
}

func (s stubbornStore) Renew(ctx context.Context, req storeapi.RenewRequest) (storeapi.Item, error) {
	it, err := s.Store.Renew(ctx, req)
	var ce *storeapi.ConditionError
	if errors.As(err, &ce) && ce.Current != nil && ce.Current.Revision == req.Revision && ce.Current.Released {
		_ = s.publishOver(ctx, req.Key, req.Revision, ce.Current.Lease)
	}
	return it, err
}

// publishOver releases revision rev of key as a failure, reason lease_lost,
// over any earlier failure release of rev, the operator's included.
func (s stubbornStore) publishOver(ctx context.Context, key lockcore.Key, rev string, lease time.Duration) error {
	now := time.Now()
	in := Intent{Op: "release-unguarded", Key: storeapi.PartitionKey(key), Rev: rev, NowMs: now.UnixMilli(),
		Result: string(lockcore.Failure), Failures: 1, Reason: "lease_lost", RecentTill: now.Add(lease).UnixMilli()}
	_, err := s.api.UpdateItem(withIntent(ctx, in), &dynamodb.UpdateItemInput{
		TableName: aws.String(s.table),
		Key:       map[string]types.AttributeValue{storeapi.AttrLockKey: &types.AttributeValueMemberS{Value: in.Key}},
		UpdateExpression: aws.String("SET #rel = :t, #relAt = :now, #result = :r, #resultRef = :ref, #resultFence = #fence, " +
			"#failures = :failures, #notBefore = :zero, #failReason = :reason, #failRecentUntil = :recent"),
		ConditionExpression: aws.String("#rev = :rev AND (#rel = :f OR #result = :r)"),
		ExpressionAttributeNames: map[string]string{"#rel": storeapi.AttrIsReleased, "#relAt": storeapi.AttrReleasedAtMs,
			"#result": storeapi.AttrResult, "#resultRef": storeapi.AttrResultRef, "#resultFence": storeapi.AttrResultFence,
			"#fence": storeapi.AttrFence, "#failures": storeapi.AttrFailures, "#notBefore": storeapi.AttrNotBeforeMs,
			"#failReason": storeapi.AttrFailReason, "#failRecentUntil": storeapi.AttrFailRecentUntilMs, "#rev": storeapi.AttrRevision},
		ExpressionAttributeValues: map[string]types.AttributeValue{":t": &types.AttributeValueMemberBOOL{Value: true},
			":f": &types.AttributeValueMemberBOOL{Value: false}, ":now": num(in.NowMs), ":r": &types.AttributeValueMemberS{Value: in.Result},
			":ref": &types.AttributeValueMemberS{Value: ""}, ":failures": num(in.Failures), ":zero": num(0),
			":reason": &types.AttributeValueMemberS{Value: in.Reason}, ":recent": num(in.RecentTill),
			":rev": &types.AttributeValueMemberS{Value: rev}},
	})
	return err
}

func num(v int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
}

// View is the part of a lock item that check 5 compares, decoded from the
// DynamoDB JSON of a response.
type View struct {
	Rev        string `json:"rev"`
	Fence      int64  `json:"fence"`
	Beat       int64  `json:"beat"`
	Rel        bool   `json:"rel"`
	Result     string `json:"result,omitempty"`
	RelAt      int64  `json:"relAt,omitempty"`
	ResFence   int64  `json:"resultFence,omitempty"`
	LU         int64  `json:"lu"`
	Exp        int64  `json:"exp"`
	PrevRev    string `json:"prevRev,omitempty"`
	PrevResult string `json:"prevResult,omitempty"`
	Failures   int64  `json:"failures,omitempty"`
	NotBefore  int64  `json:"nb,omitempty"`
	RecentTill int64  `json:"recent,omitempty"`
	Reason     string `json:"reason,omitempty"`
}

// attr is one DynamoDB JSON attribute value.
type attr struct {
	S    *string `json:"S"`
	N    *string `json:"N"`
	BOOL *bool   `json:"BOOL"`
}

func (a attr) str() string {
	if a.S != nil {
		return *a.S
	}
	return ""
}

func (a attr) num() int64 {
	if a.N == nil {
		return 0
	}
	n, _ := strconv.ParseInt(*a.N, 10, 64)
	return n
}

// decodeView decodes a lock item in DynamoDB JSON; nil for an empty item.
func decodeView(m map[string]attr) *View {
	if len(m) == 0 {
		return nil
	}
	v := &View{
		Rev:        m[storeapi.AttrRevision].str(),
		Fence:      m[storeapi.AttrFence].num(),
		Beat:       m[storeapi.AttrBeat].num(),
		Result:     m[storeapi.AttrResult].str(),
		RelAt:      m[storeapi.AttrReleasedAtMs].num(),
		ResFence:   m[storeapi.AttrResultFence].num(),
		LU:         m[storeapi.AttrLeaseUntilMs].num(),
		Exp:        m[storeapi.AttrExpiresAtMs].num(),
		PrevRev:    m[storeapi.AttrPrevRevision].str(),
		PrevResult: m[storeapi.AttrPrevResult].str(),
		Failures:   m[storeapi.AttrFailures].num(),
		NotBefore:  m[storeapi.AttrNotBeforeMs].num(),
		RecentTill: m[storeapi.AttrFailRecentUntilMs].num(),
		Reason:     m[storeapi.AttrFailReason].str(),
	}
	if b := m[storeapi.AttrIsReleased].BOOL; b != nil {
		v.Rel = *b
	}
	return v
}
