package lockcore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/herdlock/herdlock/lockcore/storeapi"
)

// DynamoAPI is the part of the DynamoDB API that [DynamoStore] calls.
// *dynamodb.Client satisfies it.
type DynamoAPI interface {
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
}

var _ DynamoAPI = (*dynamodb.Client)(nil)

// DynamoStore is a [storeapi.Store] over one DynamoDB table whose partition key is
// [storeapi.AttrLockKey] (type S); [CreateTable] makes such a table. Every operation
// is a single UpdateItem or a strongly consistent GetItem. A failed
// conditional write reports the item returned with the
// ConditionalCheckFailedException (ReturnValuesOnConditionCheckFailure
// ALL_OLD), or, from servers that return none (dynalite), the item read with
// one consistent GetItem.
//
// Every call sets its own retryer through the call's option functions, so
// the client's retryer and its retry quota do not apply to lock calls:
// throttling errors come back at once, marked [ErrThrottled], for the lock
// to pace itself; other transient errors of Acquire and Get are retried
// once after at most 50 ms; Renew and Release make one attempt, which the
// lock retries with its own timeout per attempt. An Acquire retried after
// its first attempt was applied recognises its own revision, and one whose
// retry is throttled after a first attempt of unknown outcome (a 5xx,
// which DynamoDB documents may have been applied) reports an error that
// does not match [ErrThrottled]: the outcome is still unknown. See the
// package documentation for the client configuration the lock expects.
//
// DynamoStore is safe for concurrent use.
type DynamoStore struct {
	api   DynamoAPI
	table string
	retry retryers
	hot   *HotKeys // the Locks' memory of hot keys (see HotKeys)
	lat   latency  // the Locks' estimate of the table's round trips (see calltimeout.go)
}

var _ storeapi.Store = (*DynamoStore)(nil)

// NewDynamoStore returns a DynamoStore on table through client. It returns
// an error matching [ErrConfig] when client is nil (also a nil
// *dynamodb.Client) or table is empty or blank, such as an unset
// environment variable.
func NewDynamoStore(client DynamoAPI, table string) (*DynamoStore, error) {
	var problems []string
	if isNil(client) {
		problems = append(problems, "nil client")
	}
	if strings.TrimSpace(table) == "" {
		problems = append(problems, "blank table name")
	}
	if len(problems) > 0 {
		return nil, &configError{fmt.Errorf("lockcore: dynamodb store: %s", strings.Join(problems, ", "))}
	}
	return &DynamoStore{api: client, table: table, retry: newRetryers(), hot: NewHotKeys(defaultHotKeys)}, nil
}

func (s *DynamoStore) hotKeys() *HotKeys { return s.hot }

func (s *DynamoStore) latency() *latency { return &s.lat }

// Table returns the name of the store's table.
func (s *DynamoStore) Table() string { return s.table }

// Expressions of the conditional writes, one UpdateItem each, as the
// contract of [storeapi.Store] describes them. The names are placeholders for the
// Attr* constants (see exprNames); every :value is bound in the request.
//
// github.com/truora/minidyn v0.8.2 differs from DynamoDB in two ways that
// shape these expressions (see package storetest for what its runs skip):
//   - it evaluates a SET operand after the earlier assignments of the same
//     SET, where DynamoDB evaluates every operand against the item as it
//     was. acquireSet therefore copies #rev and #result into #prevRev and
//     #prevResult before it assigns #rev, so both servers store the old
//     values; keep that order.
//   - it ignores REMOVE when the expression also has SET. Acquire's REMOVE
//     (result, resultRef, resultFence, relAt, answer, ttl) is therefore not
//     applied there. The acquire guards test #rel = :true as well as
//     #result, which DynamoDB does not need (an acquired item has no
//     result) but which keeps minidyn's stale result from holding back a
//     take-over; Release writes the failure attributes with SET, zeros for
//     Success, rather than removing them.
//
// The conditions lean on DynamoDB's precedence (comparisons, then NOT, then
// AND, then OR) instead of brackets wherever the two mean the same: the
// bracket around a single comparison or an AND inside an OR adds nothing
// for DynamoDB, but dynalite's parser backtracks on each nested bracket,
// and the bracketed acquire condition took it 4.3 times as long to parse
// (1.47 ms against 0.35 ms; BENCHMARKS.md, figure 2).
const (
	acquireSet = "SET #prevRev = if_not_exists(#rev, :empty), #prevResult = if_not_exists(#result, :empty), " +
		"#prevFailReason = if_not_exists(#failReason, :empty), " +
		"#group = :group, #id = :id, #owner = :owner, #rev = :newRev, #leaseMs = :leaseMs, " +
		"#hb = :now, #acqAt = :now, #lu = :leaseUntil, #exp = :expiresAt, #rel = :false, #beat = :zero, " +
		"#account = :account, #fence = if_not_exists(#fence, :base) + :one"
	acquireRemove = " REMOVE #result, #resultRef, #resultFence, #relAt, #answer"

	// Acquire's condition: absent, or (A) guarded by (B), (C) and (D).
	acquireAbsent      = "attribute_not_exists(#lockKey)"
	acquireOpen        = "#rel = :true"
	acquireOpenClock   = " OR #exp < :nowMinusEps OR #lu < :nowMinusEps"
	acquireOpenObserve = " OR #rev = :obsRev AND #beat = :obsBeat"
	acquireNotFresh    = " AND NOT (#rel = :true AND #result = :success AND #relAt >= :freshSince)"
	acquireNotHeldBack = " AND NOT (#rel = :true AND #result = :failure AND #failRecentUntil > :now" +
		" AND #notBefore > :now)"
	acquireNotOwn = " AND #rev <> :newRev AND NOT #prevRev = :newRev"

	// Renew extends the lease when that does not shorten it; otherwise a
	// second write moves only the heartbeat and the beat.
	renewUpdate     = "SET #hb = :now, #lu = :leaseUntil ADD #beat :one"
	renewCond       = "#rev = :rev AND #rel = :false AND #lu <= :leaseUntil"
	renewBeatUpdate = "SET #hb = :now ADD #beat :one"
	renewBeatCond   = "#rev = :rev AND #rel = :false"

	releaseUpdate  = "SET #rel = :true, #relAt = :now, #result = :result, #resultRef = :ref, #resultFence = #fence"
	releaseEpisode = ", #failures = :failures, #notBefore = :notBefore, #failReason = :failReason, #failRecentUntil = :failRecentUntil"
	releaseAnswer  = ", #answer = :answer"
	releaseHolds   = ", #holdMean = :holdMean, #holdDev = :holdDev"
	// The record of the publication (see Item.PublishedRevision): a
	// holder's release writes its own, an operator's clears it, and the
	// freeing of a write nobody held leaves it.
	releasePublished = ", #pubRev = :rev, #pubResult = :result"
	releaseClearPub  = ", #pubRev = :empty, #pubResult = :empty"
	// A release writes only an item its revision has not released: the
	// retry of an applied release fails the condition and is recognised
	// (see releasedAlready), so it never moves #relAt, the time waiters
	// judge the success's freshness by.
	releaseCond = "#rev = :rev AND #rel = :false"
	// An operator's force-release also replaces its holder's failure
	// release, but not an operator's (its own retry; see
	// [storeapi.OperatorReleaseReason]).
	releaseOperatorCond = "#rev = :rev AND (#rel = :false OR #result = :result AND NOT #failReason = :opReason)"
)

// placeholders maps each name placeholder to its attribute.
var placeholders = map[string]string{
	"#lockKey": storeapi.AttrLockKey, "#group": storeapi.AttrLockGroup, "#id": storeapi.AttrLockID,
	"#owner": storeapi.AttrHolderName, "#rev": storeapi.AttrRevision, "#fence": storeapi.AttrFence, "#beat": storeapi.AttrBeat,
	"#leaseMs": storeapi.AttrLeaseMs, "#hb": storeapi.AttrHeartbeatAtMs, "#lu": storeapi.AttrLeaseUntilMs,
	"#exp": storeapi.AttrExpiresAtMs, "#rel": storeapi.AttrIsReleased, "#result": storeapi.AttrResult,
	"#resultRef": storeapi.AttrResultRef, "#resultFence": storeapi.AttrResultFence, "#relAt": storeapi.AttrReleasedAtMs,
	"#account": storeapi.AttrRecordAccount, "#ttl": storeapi.AttrTTL, "#prevRev": storeapi.AttrPrevRevision,
	"#prevResult": storeapi.AttrPrevResult, "#prevFailReason": storeapi.AttrPrevFailReason,
	"#pubRev": storeapi.AttrPublishedRevision, "#pubResult": storeapi.AttrPublishedResult, "#failures": storeapi.AttrFailures, "#notBefore": storeapi.AttrNotBeforeMs,
	"#failReason": storeapi.AttrFailReason, "#failRecentUntil": storeapi.AttrFailRecentUntilMs, "#answer": storeapi.AttrAnswer,
	"#acqAt": storeapi.AttrAcquiredAtMs, "#holdMean": storeapi.AttrHoldMeanMs, "#holdDev": storeapi.AttrHoldDevMs,
}

// exprNames returns the bindings of the placeholders that exprs use, and
// only those: DynamoDB refuses a request with an unused name.
func exprNames(exprs ...string) map[string]string {
	m := map[string]string{}
	for _, e := range exprs {
		for i := 0; i < len(e); i++ {
			if e[i] != '#' {
				continue
			}
			j := i + 1
			for j < len(e) && (e[j] >= 'a' && e[j] <= 'z' || e[j] >= 'A' && e[j] <= 'Z') {
				j++
			}
			if attr, ok := placeholders[e[i:j]]; ok {
				m[e[i:j]] = attr
			}
			i = j - 1
		}
	}
	return m
}

func str(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func num(v int64) types.AttributeValue  { return &types.AttributeValueMemberN{Value: fmt.Sprint(v)} }
func boolean(v bool) types.AttributeValue {
	return &types.AttributeValueMemberBOOL{Value: v}
}

func (s *DynamoStore) keyOf(k Key) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{storeapi.AttrLockKey: str(storeapi.PartitionKey(k))}
}

// acquireInput builds the UpdateItem request of Acquire: exactly one write,
// with the wall-clock and clock-free branches and the two guards of the
// condition present only when req enables them.
func (s *DynamoStore) acquireInput(req storeapi.AcquireRequest) *dynamodb.UpdateItemInput {
	update := acquireSet
	remove := acquireRemove
	values := map[string]types.AttributeValue{
		":empty":      str(""),
		":group":      str(req.Key.Group),
		":id":         str(req.Key.ID),
		":owner":      str(req.Holder),
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
	cond := acquireCondition(req, values)
	return &dynamodb.UpdateItemInput{
		TableName:                           aws.String(s.table),
		Key:                                 s.keyOf(req.Key),
		UpdateExpression:                    aws.String(update + remove),
		ConditionExpression:                 aws.String(cond),
		ExpressionAttributeNames:            exprNames(update, remove, cond),
		ExpressionAttributeValues:           values,
		ReturnValues:                        types.ReturnValueAllNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
}

// acquireCondition returns Acquire's condition for req and binds the values
// it needs in values.
func acquireCondition(req storeapi.AcquireRequest, values map[string]types.AttributeValue) string {
	bind := func(k string, v types.AttributeValue) { values[k] = v }
	open := acquireOpen
	if req.UseWallClock {
		open += acquireOpenClock
		bind(":nowMinusEps", num(req.NowMs-req.ClockAllowance.Milliseconds()))
	}
	if o := req.Observed; o != nil {
		open += acquireOpenObserve
		bind(":obsRev", str(o.Revision))
		bind(":obsBeat", num(o.Beat))
	}
	var guards string
	if req.FreshSuccessSinceMs != 0 {
		guards += acquireNotFresh
		bind(":success", str(string(Success)))
		bind(":freshSince", num(req.FreshSuccessSinceMs))
	}
	if req.MaxAttempts > 0 {
		guards += acquireNotHeldBack
		bind(":failure", str(string(Failure)))
	}
	if open != acquireOpen {
		open = "(" + open + ")"
	}
	return acquireAbsent + " OR " + open + guards + acquireNotOwn
}

// Acquire implements [storeapi.Store.Acquire] with one conditional UpdateItem.
func (s *DynamoStore) Acquire(ctx context.Context, req storeapi.AcquireRequest) (storeapi.Item, error) {
	if err := checkAcquireRequest(req); err != nil {
		return storeapi.Item{}, fmt.Errorf("lockcore: dynamodb acquire: %w", err)
	}
	it, err := s.update(ctx, "acquire", req.Key, s.acquireInput(req))
	var ce *storeapi.ConditionError
	if errors.As(err, &ce) && ce.Current != nil && ce.Current.Revision == req.Revision && !ce.Current.Released {
		// An earlier attempt of this request was applied and its response
		// lost; the SDK's retry then failed on our own revision.
		return *ce.Current, nil
	}
	return it, err
}

// Renew implements [storeapi.Store.Renew]: one conditional UpdateItem that extends
// the lease, and, only when the stored lease already ends later, a second
// one that moves the heartbeat and the beat alone.
func (s *DynamoStore) Renew(ctx context.Context, req storeapi.RenewRequest) (storeapi.Item, error) {
	if err := checkRenewRequest(req); err != nil {
		return storeapi.Item{}, fmt.Errorf("lockcore: dynamodb renew: %w", err)
	}
	values := map[string]types.AttributeValue{
		":now":        num(req.NowMs),
		":leaseUntil": num(req.LeaseUntilMs),
		":one":        num(1),
		":rev":        str(req.Revision),
		":false":      boolean(false),
	}
	it, err := s.update(ctx, "renew", req.Key, s.writeInput(req.Key, renewUpdate, renewCond, values))
	var ce *storeapi.ConditionError
	if !errors.As(err, &ce) || ce.Current == nil || ce.Current.Revision != req.Revision ||
		ce.Current.Released || ce.Current.LeaseUntilMs <= req.LeaseUntilMs {
		return it, err
	}
	delete(values, ":leaseUntil")
	return s.update(ctx, "renew", req.Key, s.writeInput(req.Key, renewBeatUpdate, renewBeatCond, values))
}

// Release implements [storeapi.Store.Release].
func (s *DynamoStore) Release(ctx context.Context, req storeapi.ReleaseRequest) (storeapi.Item, error) {
	if err := checkReleaseRequest(req); err != nil {
		return storeapi.Item{}, fmt.Errorf("lockcore: dynamodb release: %w", err)
	}
	update := releaseUpdate
	values := map[string]types.AttributeValue{
		":true":   boolean(true),
		":now":    num(req.NowMs),
		":result": str(string(req.Result)),
		":ref":    str(req.ResultRef),
		":rev":    str(req.Revision),
		":false":  boolean(false),
	}
	switch {
	case req.Result == Success:
		update += releaseEpisode
		values[":failures"], values[":notBefore"] = num(0), num(0)
		values[":failReason"], values[":failRecentUntil"] = str(""), num(0)
	case !req.KeepEpisode:
		update += releaseEpisode
		values[":failures"], values[":notBefore"] = num(req.Failures), num(req.NotBeforeMs)
		values[":failReason"], values[":failRecentUntil"] = str(req.FailReason), num(req.FailRecentUntilMs)
	}
	if len(req.Answer) > 0 {
		update += releaseAnswer
		values[":answer"] = &types.AttributeValueMemberB{Value: req.Answer}
	}
	if req.HoldMeanMs > 0 {
		update += releaseHolds
		values[":holdMean"], values[":holdDev"] = num(req.HoldMeanMs), num(req.HoldDevMs)
	}
	cond := releaseCond
	switch {
	case byOperator(req):
		cond = releaseOperatorCond
		values[":opReason"] = str(storeapi.OperatorReleaseReason)
		update += releaseClearPub
		values[":empty"] = str("")
	case !req.Unheld:
		update += releasePublished
	}
	it, err := s.update(ctx, "release", req.Key, s.writeInput(req.Key, update, cond, values))
	var ce *storeapi.ConditionError
	if errors.As(err, &ce) && ce.Current != nil &&
		(releasedAlready(*ce.Current, req) || ownPublication(*ce.Current, req) || recordedPublication(*ce.Current, req)) {
		return *ce.Current, nil
	}
	return it, err
}

// writeInput builds a conditional UpdateItem on key that returns the item
// as written, or as it was when the condition failed.
func (s *DynamoStore) writeInput(key Key, update, cond string, values map[string]types.AttributeValue) *dynamodb.UpdateItemInput {
	return &dynamodb.UpdateItemInput{
		TableName:                           aws.String(s.table),
		Key:                                 s.keyOf(key),
		UpdateExpression:                    aws.String(update),
		ConditionExpression:                 aws.String(cond),
		ExpressionAttributeNames:            exprNames(update, cond),
		ExpressionAttributeValues:           values,
		ReturnValues:                        types.ReturnValueAllNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
}

// Get implements [storeapi.Store.Get] with a strongly consistent GetItem.
func (s *DynamoStore) Get(ctx context.Context, key Key) (storeapi.Item, bool, error) {
	if err := checkKey(key); err != nil {
		return storeapi.Item{}, false, fmt.Errorf("lockcore: dynamodb get: %w", err)
	}
	it, found, err := s.get(ctx, key)
	if err != nil {
		return storeapi.Item{}, false, storeError("get", err)
	}
	return it, found, nil
}

func (s *DynamoStore) get(ctx context.Context, key Key) (storeapi.Item, bool, error) {
	out, err := s.api.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(s.table),
		Key:            s.keyOf(key),
		ConsistentRead: aws.Bool(true),
	}, s.retry.optFns("get")...)
	if err != nil {
		return storeapi.Item{}, false, err
	}
	if len(out.Item) == 0 {
		return storeapi.Item{}, false, nil
	}
	it, err := decodeItem(out.Item)
	if err != nil {
		return storeapi.Item{}, false, err
	}
	return it, true, nil
}

// update runs one conditional UpdateItem and turns a failed condition into a
// *ConditionError carrying the item that failed it: the one in the
// exception, or else one read with a consistent GetItem. DynamoDB's refusal
// of an oversized item matches [storeapi.ErrItemTooLarge].
func (s *DynamoStore) update(ctx context.Context, op string, key Key, in *dynamodb.UpdateItemInput) (storeapi.Item, error) {
	var out *dynamodb.UpdateItemOutput
	var err error
	if op == "acquire" {
		out, err = s.acquireItem(ctx, in)
	} else {
		out, err = s.api.UpdateItem(ctx, in, s.retry.optFns(op)...)
	}
	if err == nil {
		if len(out.Attributes) == 0 {
			return storeapi.Item{}, fmt.Errorf("lockcore: dynamodb %s: no item in the response", op)
		}
		it, err := decodeItem(out.Attributes)
		if err != nil {
			return storeapi.Item{}, fmt.Errorf("lockcore: dynamodb %s: %w", op, err)
		}
		return it, nil
	}
	var ccf *types.ConditionalCheckFailedException
	if !errors.As(err, &ccf) {
		if tooLarge(err) {
			return storeapi.Item{}, fmt.Errorf("lockcore: dynamodb %s: %w: %w", op, storeapi.ErrItemTooLarge, err)
		}
		return storeapi.Item{}, storeError(op, err)
	}
	if len(ccf.Item) > 0 {
		it, err := decodeItem(ccf.Item)
		if err != nil {
			return storeapi.Item{}, fmt.Errorf("lockcore: dynamodb %s: condition failed: %w", op, err)
		}
		return storeapi.Item{}, &storeapi.ConditionError{Op: op, Current: &it}
	}
	it, found, err := s.get(ctx, key)
	if err != nil {
		if isDynamoThrottle(err) {
			err = fmt.Errorf("%w: %w", ErrThrottled, err)
		}
		return storeapi.Item{}, fmt.Errorf("lockcore: dynamodb %s: condition failed, then reading the item: %w", op, err)
	}
	if !found {
		return storeapi.Item{}, &storeapi.ConditionError{Op: op}
	}
	return storeapi.Item{}, &storeapi.ConditionError{Op: op, Current: &it}
}

// tooLarge reports whether err is DynamoDB's ValidationException for an
// item over the size limit ("Item size has exceeded the maximum allowed
// size", or "Item size to update has ..." from UpdateItem).
func tooLarge(err error) bool {
	var ae smithy.APIError
	return errors.As(err, &ae) && ae.ErrorCode() == "ValidationException" &&
		strings.Contains(ae.ErrorMessage(), "exceeded the maximum allowed size")
}

// requiredAttrs are the attributes every acquired item has and without which
// an item cannot be judged.
var requiredAttrs = []string{storeapi.AttrLockKey, storeapi.AttrLockGroup, storeapi.AttrLockID, storeapi.AttrRevision, storeapi.AttrFence, storeapi.AttrBeat, storeapi.AttrIsReleased}

// decodeItem converts a stored item into an Item, with an error naming what
// is missing or malformed instead of a zero value that could be mistaken
// for a real state.
func decodeItem(av map[string]types.AttributeValue) (storeapi.Item, error) {
	var missing []string
	for _, name := range requiredAttrs {
		if _, ok := av[name]; !ok {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return storeapi.Item{}, fmt.Errorf("malformed lock item: missing %s", strings.Join(missing, ", "))
	}
	d := attrDecoder{av: av}
	it := storeapi.Item{
		Key:               Key{Group: d.str(storeapi.AttrLockGroup), ID: d.str(storeapi.AttrLockID)},
		Holder:            d.str(storeapi.AttrHolderName),
		Revision:          d.str(storeapi.AttrRevision),
		Fence:             d.num(storeapi.AttrFence),
		Beat:              d.num(storeapi.AttrBeat),
		Lease:             time.Duration(d.num(storeapi.AttrLeaseMs)) * time.Millisecond,
		HeartbeatAtMs:     d.num(storeapi.AttrHeartbeatAtMs),
		LeaseUntilMs:      d.num(storeapi.AttrLeaseUntilMs),
		ExpiresAtMs:       d.num(storeapi.AttrExpiresAtMs),
		Released:          d.boolean(storeapi.AttrIsReleased),
		Result:            Result(d.str(storeapi.AttrResult)),
		ResultRef:         d.str(storeapi.AttrResultRef),
		ResultFence:       d.num(storeapi.AttrResultFence),
		ReleasedAtMs:      d.num(storeapi.AttrReleasedAtMs),
		RecordAccount:     d.str(storeapi.AttrRecordAccount),
		TTL:               d.num(storeapi.AttrTTL),
		PrevRevision:      d.str(storeapi.AttrPrevRevision),
		PrevResult:        Result(d.str(storeapi.AttrPrevResult)),
		PrevFailReason:    d.str(storeapi.AttrPrevFailReason),
		PublishedRevision: d.str(storeapi.AttrPublishedRevision),
		PublishedResult:   Result(d.str(storeapi.AttrPublishedResult)),
		Failures:          d.num(storeapi.AttrFailures),
		NotBeforeMs:       d.num(storeapi.AttrNotBeforeMs),
		FailReason:        d.str(storeapi.AttrFailReason),
		FailRecentUntilMs: d.num(storeapi.AttrFailRecentUntilMs),
		Answer:            d.bytes(storeapi.AttrAnswer),
		AcquiredAtMs:      d.num(storeapi.AttrAcquiredAtMs),
		HoldMeanMs:        d.num(storeapi.AttrHoldMeanMs),
		HoldDevMs:         d.num(storeapi.AttrHoldDevMs),
	}
	_ = d.str(storeapi.AttrLockKey) // present (checked above) and a string
	if d.err != nil {
		return storeapi.Item{}, fmt.Errorf("malformed lock item: %w", d.err)
	}
	for _, res := range []Result{it.Result, it.PrevResult, it.PublishedResult} {
		if res != "" && !res.Valid() {
			return storeapi.Item{}, fmt.Errorf("malformed lock item: result %q is neither %q nor %q", res, Success, Failure)
		}
	}
	return it, nil
}
