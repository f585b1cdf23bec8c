package lockcore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Attribute names of a lock item in the DynamoDB table. AttrLockKey is the
// table's partition key (type S), holding [PartitionKey] of the lock's
// [Key]; the others are ordinary attributes. AttrTTL (Unix epoch seconds) is
// written only when the holder asked for one and is meant for the table's
// TTL setting, for clean-up only: DynamoDB may delete expired items days
// late, so it is never used as expiry.
const (
	AttrLockKey       = "lockKey"
	AttrLockGroup     = "lockGroup"
	AttrLockID        = "lockId"
	AttrOwnerName     = "ownerName"
	AttrRevision      = "revision"
	AttrFence         = "fence"
	AttrBeat          = "beat"
	AttrLeaseMs       = "leaseMs"
	AttrHeartbeatAtMs = "heartbeatAtMs"
	AttrLeaseUntilMs  = "leaseUntilMs"
	AttrExpiresAtMs   = "expiresAtMs"
	AttrIsReleased    = "isReleased"
	AttrResult        = "result"
	AttrResultRef     = "resultRef"
	AttrResultFence   = "resultFence"
	AttrReleasedAtMs  = "releasedAtMs"
	AttrRecordAccount = "recordAccount"
	AttrWaiters       = "waiters"
	AttrTTL           = "ttl"
)

// DynamoAPI is the part of the DynamoDB API that [DynamoStore] calls.
// *dynamodb.Client satisfies it.
type DynamoAPI interface {
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
}

var _ DynamoAPI = (*dynamodb.Client)(nil)

// DynamoStore is a [Store] over one DynamoDB table whose partition key is
// [AttrLockKey] (type S); [CreateTable] makes such a table. Every operation
// is a single UpdateItem or a strongly consistent GetItem. A failed
// conditional write reports the item returned with the
// ConditionalCheckFailedException (ReturnValuesOnConditionCheckFailure
// ALL_OLD), or, from servers that return none (dynalite), the item read with
// one consistent GetItem.
//
// Configure the client's retryer explicitly: the store is safe under
// retried writes (an Acquire whose first attempt was applied recognises its
// own revision), but how long a call may take is the retryer's choice.
//
// DynamoStore is safe for concurrent use.
type DynamoStore struct {
	api   DynamoAPI
	table string
}

var _ Store = (*DynamoStore)(nil)

// NewDynamoStore returns a DynamoStore on table through client. It returns
// an error when client is nil or table is blank.
func NewDynamoStore(client DynamoAPI, table string) (*DynamoStore, error) {
	var problems []string
	if client == nil {
		problems = append(problems, "nil client")
	}
	if strings.TrimSpace(table) == "" {
		problems = append(problems, "blank table name")
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("lockcore: dynamodb store: %s", strings.Join(problems, ", "))
	}
	return &DynamoStore{api: client, table: table}, nil
}

// Table returns the name of the store's table.
func (s *DynamoStore) Table() string { return s.table }

// Expressions of the conditional writes (PROTOCOL.md §4). The names are
// placeholders for the Attr* constants, bound in exprNames.
const (
	acquireSet = "SET #group = :group, #id = :id, #owner = :owner, #rev = :newRev, #leaseMs = :leaseMs, " +
		"#hb = :now, #lu = :leaseUntil, #exp = :expiresAt, #rel = :false, #beat = :zero, #waiters = :zero, " +
		"#account = :account, #fence = if_not_exists(#fence, :base) + :one"
	acquireRemove      = " REMOVE #result, #resultRef, #resultFence, #relAt"
	acquireCond        = "attribute_not_exists(#lockKey) OR #rel = :true"
	acquireCondFresh   = "attribute_not_exists(#lockKey) OR (#rel = :true AND NOT (#result = :success AND #relAt >= :freshSince))"
	acquireCondClock   = " OR #exp < :nowMinusEps OR #lu < :nowMinusEps"
	acquireCondObserve = " OR (#rev = :obsRev AND #beat = :obsBeat)"

	renewUpdate = "SET #hb = :now, #lu = :leaseUntil ADD #beat :one"
	renewCond   = "#rev = :rev AND #rel = :false AND #lu <= :leaseUntil"

	releaseUpdate = "SET #rel = :true, #relAt = :now, #result = :result, #resultRef = :ref, #resultFence = #fence"
	releaseCond   = "#rev = :rev AND (#rel = :false OR #result = :result)"

	enrollUpdate = "ADD #waiters :one"
	enrollCond   = "#rev = :rev"
)

// exprNames returns the placeholder bindings for the given placeholders.
func exprNames(placeholders ...string) map[string]string {
	all := map[string]string{
		"#lockKey": AttrLockKey, "#group": AttrLockGroup, "#id": AttrLockID,
		"#owner": AttrOwnerName, "#rev": AttrRevision, "#fence": AttrFence, "#beat": AttrBeat,
		"#leaseMs": AttrLeaseMs, "#hb": AttrHeartbeatAtMs, "#lu": AttrLeaseUntilMs,
		"#exp": AttrExpiresAtMs, "#rel": AttrIsReleased, "#result": AttrResult,
		"#resultRef": AttrResultRef, "#resultFence": AttrResultFence, "#relAt": AttrReleasedAtMs,
		"#account": AttrRecordAccount, "#waiters": AttrWaiters, "#ttl": AttrTTL,
	}
	m := make(map[string]string, len(placeholders))
	for _, p := range placeholders {
		m[p] = all[p]
	}
	return m
}

func str(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func num(v int64) types.AttributeValue  { return &types.AttributeValueMemberN{Value: fmt.Sprint(v)} }
func boolean(v bool) types.AttributeValue {
	return &types.AttributeValueMemberBOOL{Value: v}
}

func (s *DynamoStore) keyOf(k Key) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{AttrLockKey: str(PartitionKey(k))}
}

// acquireInput builds the UpdateItem request of Acquire: exactly one write,
// with the wall-clock and clock-free branches of the condition present only
// when req enables them.
func (s *DynamoStore) acquireInput(req AcquireRequest) *dynamodb.UpdateItemInput {
	update := acquireSet
	remove := acquireRemove
	names := exprNames("#lockKey", "#group", "#id", "#owner", "#rev", "#fence", "#beat", "#leaseMs",
		"#hb", "#lu", "#exp", "#rel", "#result", "#resultRef", "#resultFence", "#relAt", "#account", "#waiters", "#ttl")
	values := map[string]types.AttributeValue{
		":group":      str(req.Key.Group),
		":id":         str(req.Key.ID),
		":owner":      str(req.Owner),
		":newRev":     str(req.Revision),
		":leaseMs":    num(req.Lease.Milliseconds()),
		":now":        num(req.NowMs),
		":leaseUntil": num(req.LeaseUntilMs),
		":expiresAt":  num(req.ExpiresAtMs),
		":false":      boolean(false),
		":true":       boolean(true),
		":zero":       num(0),
		":account":    str(req.RecordAccount),
		":base":       num(req.FenceBase),
		":one":        num(1),
	}
	if req.TTL != 0 {
		update += ", #ttl = :ttl"
		values[":ttl"] = num(req.TTL)
	} else {
		remove += ", #ttl"
	}
	cond := acquireCond
	if req.FreshSuccessSinceMs != 0 {
		cond = acquireCondFresh
		values[":success"] = str(string(Success))
		values[":freshSince"] = num(req.FreshSuccessSinceMs)
	}
	if req.UseWallClock {
		cond += acquireCondClock
		values[":nowMinusEps"] = num(req.NowMs - req.ClockAllowance.Milliseconds())
	}
	if o := req.Observed; o != nil {
		cond += acquireCondObserve
		values[":obsRev"] = str(o.Revision)
		values[":obsBeat"] = num(o.Beat)
	}
	return &dynamodb.UpdateItemInput{
		TableName:                           aws.String(s.table),
		Key:                                 s.keyOf(req.Key),
		UpdateExpression:                    aws.String(update + remove),
		ConditionExpression:                 aws.String(cond),
		ExpressionAttributeNames:            names,
		ExpressionAttributeValues:           values,
		ReturnValues:                        types.ReturnValueAllNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
}

// Acquire implements [Store.Acquire] with one conditional UpdateItem.
func (s *DynamoStore) Acquire(ctx context.Context, req AcquireRequest) (Item, error) {
	if req.Revision == "" {
		return Item{}, fmt.Errorf("lockcore: dynamodb acquire: %w", errEmptyRevision)
	}
	it, err := s.update(ctx, "acquire", req.Key, s.acquireInput(req))
	var ce *ConditionError
	if errors.As(err, &ce) && ce.Current != nil && ce.Current.Revision == req.Revision {
		// An earlier attempt of this request was applied and its response
		// lost; the SDK's retry then failed on our own revision.
		return *ce.Current, nil
	}
	return it, err
}

// Renew implements [Store.Renew].
func (s *DynamoStore) Renew(ctx context.Context, req RenewRequest) (Item, error) {
	if req.Revision == "" {
		return Item{}, fmt.Errorf("lockcore: dynamodb renew: %w", errEmptyRevision)
	}
	return s.update(ctx, "renew", req.Key, &dynamodb.UpdateItemInput{
		TableName:                aws.String(s.table),
		Key:                      s.keyOf(req.Key),
		UpdateExpression:         aws.String(renewUpdate),
		ConditionExpression:      aws.String(renewCond),
		ExpressionAttributeNames: exprNames("#hb", "#lu", "#beat", "#rev", "#rel"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":now":        num(req.NowMs),
			":leaseUntil": num(req.LeaseUntilMs),
			":one":        num(1),
			":rev":        str(req.Revision),
			":false":      boolean(false),
		},
		ReturnValues:                        types.ReturnValueAllNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
}

// Release implements [Store.Release].
func (s *DynamoStore) Release(ctx context.Context, req ReleaseRequest) (Item, error) {
	if req.Revision == "" {
		return Item{}, fmt.Errorf("lockcore: dynamodb release: %w", errEmptyRevision)
	}
	if !req.Result.Valid() {
		return Item{}, fmt.Errorf("lockcore: dynamodb release: invalid result %q", req.Result)
	}
	return s.update(ctx, "release", req.Key, &dynamodb.UpdateItemInput{
		TableName:                aws.String(s.table),
		Key:                      s.keyOf(req.Key),
		UpdateExpression:         aws.String(releaseUpdate),
		ConditionExpression:      aws.String(releaseCond),
		ExpressionAttributeNames: exprNames("#rel", "#relAt", "#result", "#resultRef", "#resultFence", "#fence", "#rev"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":true":   boolean(true),
			":now":    num(req.NowMs),
			":result": str(string(req.Result)),
			":ref":    str(req.ResultRef),
			":rev":    str(req.Revision),
			":false":  boolean(false),
		},
		ReturnValues:                        types.ReturnValueAllNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
}

// Enroll implements [Store.Enroll].
func (s *DynamoStore) Enroll(ctx context.Context, key Key, revision string) (Item, error) {
	if revision == "" {
		return Item{}, fmt.Errorf("lockcore: dynamodb enroll: %w", errEmptyRevision)
	}
	return s.update(ctx, "enroll", key, &dynamodb.UpdateItemInput{
		TableName:                aws.String(s.table),
		Key:                      s.keyOf(key),
		UpdateExpression:         aws.String(enrollUpdate),
		ConditionExpression:      aws.String(enrollCond),
		ExpressionAttributeNames: exprNames("#waiters", "#rev"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":one": num(1),
			":rev": str(revision),
		},
		ReturnValues:                        types.ReturnValueAllNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
}

// Get implements [Store.Get] with a strongly consistent GetItem.
func (s *DynamoStore) Get(ctx context.Context, key Key) (Item, bool, error) {
	it, found, err := s.get(ctx, key)
	if err != nil {
		return Item{}, false, fmt.Errorf("lockcore: dynamodb get: %w", err)
	}
	return it, found, nil
}

func (s *DynamoStore) get(ctx context.Context, key Key) (Item, bool, error) {
	out, err := s.api.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(s.table),
		Key:            s.keyOf(key),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return Item{}, false, err
	}
	if len(out.Item) == 0 {
		return Item{}, false, nil
	}
	it, err := decodeItem(out.Item)
	if err != nil {
		return Item{}, false, err
	}
	return it, true, nil
}

// update runs one conditional UpdateItem and turns a failed condition into a
// *ConditionError carrying the item that failed it: the one in the
// exception, or else one read with a consistent GetItem.
func (s *DynamoStore) update(ctx context.Context, op string, key Key, in *dynamodb.UpdateItemInput) (Item, error) {
	out, err := s.api.UpdateItem(ctx, in)
	if err == nil {
		if len(out.Attributes) == 0 {
			return Item{}, fmt.Errorf("lockcore: dynamodb %s: no item in the response", op)
		}
		it, err := decodeItem(out.Attributes)
		if err != nil {
			return Item{}, fmt.Errorf("lockcore: dynamodb %s: %w", op, err)
		}
		return it, nil
	}
	var ccf *types.ConditionalCheckFailedException
	if !errors.As(err, &ccf) {
		return Item{}, fmt.Errorf("lockcore: dynamodb %s: %w", op, err)
	}
	if len(ccf.Item) > 0 {
		it, err := decodeItem(ccf.Item)
		if err != nil {
			return Item{}, fmt.Errorf("lockcore: dynamodb %s: condition failed: %w", op, err)
		}
		return Item{}, &ConditionError{Op: op, Current: &it}
	}
	it, found, err := s.get(ctx, key)
	if err != nil {
		return Item{}, fmt.Errorf("lockcore: dynamodb %s: condition failed, then reading the item: %w", op, err)
	}
	if !found {
		return Item{}, &ConditionError{Op: op}
	}
	return Item{}, &ConditionError{Op: op, Current: &it}
}

// record is the stored form of an [Item].
type record struct {
	LockKey       string `dynamodbav:"lockKey"`
	LockGroup     string `dynamodbav:"lockGroup"`
	LockID        string `dynamodbav:"lockId"`
	OwnerName     string `dynamodbav:"ownerName"`
	Revision      string `dynamodbav:"revision"`
	Fence         int64  `dynamodbav:"fence"`
	Beat          int64  `dynamodbav:"beat"`
	LeaseMs       int64  `dynamodbav:"leaseMs"`
	HeartbeatAtMs int64  `dynamodbav:"heartbeatAtMs"`
	LeaseUntilMs  int64  `dynamodbav:"leaseUntilMs"`
	ExpiresAtMs   int64  `dynamodbav:"expiresAtMs"`
	IsReleased    bool   `dynamodbav:"isReleased"`
	Result        string `dynamodbav:"result,omitempty"`
	ResultRef     string `dynamodbav:"resultRef,omitempty"`
	ResultFence   int64  `dynamodbav:"resultFence,omitempty"`
	ReleasedAtMs  int64  `dynamodbav:"releasedAtMs,omitempty"`
	RecordAccount string `dynamodbav:"recordAccount"`
	Waiters       int64  `dynamodbav:"waiters"`
	TTL           int64  `dynamodbav:"ttl,omitempty"`
}

// requiredAttrs are the attributes every acquired item has and without which
// an item cannot be judged.
var requiredAttrs = []string{AttrLockKey, AttrLockGroup, AttrLockID, AttrRevision, AttrFence, AttrBeat, AttrIsReleased}

// decodeItem converts a stored item into an Item, with an error naming what
// is missing or malformed instead of a zero value that could be mistaken
// for a real state.
func decodeItem(av map[string]types.AttributeValue) (Item, error) {
	var missing []string
	for _, name := range requiredAttrs {
		if _, ok := av[name]; !ok {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return Item{}, fmt.Errorf("malformed lock item: missing %s", strings.Join(missing, ", "))
	}
	var r record
	if err := attributevalue.UnmarshalMap(av, &r); err != nil {
		return Item{}, fmt.Errorf("malformed lock item: %w", err)
	}
	if res := Result(r.Result); res != "" && !res.Valid() {
		return Item{}, fmt.Errorf("malformed lock item: result %q is neither %q nor %q", r.Result, Success, Failure)
	}
	return Item{
		Key:           Key{Group: r.LockGroup, ID: r.LockID},
		Owner:         r.OwnerName,
		Revision:      r.Revision,
		Fence:         r.Fence,
		Beat:          r.Beat,
		Lease:         time.Duration(r.LeaseMs) * time.Millisecond,
		HeartbeatAtMs: r.HeartbeatAtMs,
		LeaseUntilMs:  r.LeaseUntilMs,
		ExpiresAtMs:   r.ExpiresAtMs,
		Released:      r.IsReleased,
		Result:        Result(r.Result),
		ResultRef:     r.ResultRef,
		ResultFence:   r.ResultFence,
		ReleasedAtMs:  r.ReleasedAtMs,
		RecordAccount: r.RecordAccount,
		Waiters:       r.Waiters,
		TTL:           r.TTL,
	}, nil
}
