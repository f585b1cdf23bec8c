package lockcore_test

import (
	"context"
	"errors"
	"maps"
	"reflect"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/lockcore/storeapi"
)

// fakeDynamo is a scripted lockcore.DynamoAPI: it records every request and
// answers with the configured output or error.
type fakeDynamo struct {
	mu        sync.Mutex // guards all fields
	updates   []*dynamodb.UpdateItemInput
	gets      []*dynamodb.GetItemInput
	updateOut *dynamodb.UpdateItemOutput
	updateErr error
	updateSeq []fakeReply // answered in turn before updateOut/updateErr
	getOut    *dynamodb.GetItemOutput
	getErr    error
}

func (f *fakeDynamo) UpdateItem(_ context.Context, in *dynamodb.UpdateItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.updates = append(f.updates, in)
	if len(f.updateSeq) > 0 {
		r := f.updateSeq[0]
		f.updateSeq = f.updateSeq[1:]
		return r.out, r.err
	}
	return f.updateOut, f.updateErr
}

type fakeReply struct {
	out *dynamodb.UpdateItemOutput
	err error
}

func (f *fakeDynamo) GetItem(_ context.Context, in *dynamodb.GetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gets = append(f.gets, in)
	return f.getOut, f.getErr
}

func avS(v string) types.AttributeValue  { return &types.AttributeValueMemberS{Value: v} }
func avN(v string) types.AttributeValue  { return &types.AttributeValueMemberN{Value: v} }
func avBool(v bool) types.AttributeValue { return &types.AttributeValueMemberBOOL{Value: v} }

var fakeKey = lockcore.Key{Group: "fx", ID: "EUR-USD"}

// storedItem is a well-formed stored item at revision rev.
func storedItem(rev string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		storeapi.AttrLockKey:           avS("fx/EUR-USD"),
		storeapi.AttrLockGroup:         avS("fx"),
		storeapi.AttrLockID:            avS("EUR-USD"),
		storeapi.AttrHolderName:        avS("fn"),
		storeapi.AttrRevision:          avS(rev),
		storeapi.AttrFence:             avN("12"),
		storeapi.AttrBeat:              avN("3"),
		storeapi.AttrLeaseMs:           avN("10000"),
		storeapi.AttrHeartbeatAtMs:     avN("1000"),
		storeapi.AttrLeaseUntilMs:      avN("11000"),
		storeapi.AttrExpiresAtMs:       avN("61000"),
		storeapi.AttrIsReleased:        avBool(true),
		storeapi.AttrResult:            avS("success"),
		storeapi.AttrResultRef:         avS("ref"),
		storeapi.AttrResultFence:       avN("12"),
		storeapi.AttrReleasedAtMs:      avN("2000"),
		storeapi.AttrRecordAccount:     avS("act:1/app:2"),
		storeapi.AttrTTL:               avN("99"),
		storeapi.AttrPrevRevision:      avS("before"),
		storeapi.AttrPrevResult:        avS("failure"),
		storeapi.AttrFailures:          avN("1"),
		storeapi.AttrNotBeforeMs:       avN("500"),
		storeapi.AttrFailReason:        avS("upstream_429"),
		storeapi.AttrFailRecentUntilMs: avN("1500"),
		storeapi.AttrAnswer:            &types.AttributeValueMemberB{Value: []byte("42")},
	}
}

// decoded is storedItem(rev) as an Item.
func decoded(rev string) storeapi.Item {
	return storeapi.Item{
		Key: fakeKey, Holder: "fn", Revision: rev, Fence: 12, Beat: 3, Lease: 10 * time.Second,
		HeartbeatAtMs: 1000, LeaseUntilMs: 11000, ExpiresAtMs: 61000, Released: true,
		Result: lockcore.Success, ResultRef: "ref", ResultFence: 12, ReleasedAtMs: 2000,
		RecordAccount: "act:1/app:2", TTL: 99, PrevRevision: "before", PrevResult: lockcore.Failure,
		Failures: 1, NotBeforeMs: 500, FailReason: "upstream_429", FailRecentUntilMs: 1500, Answer: []byte("42"),
	}
}

func newFakeStore(t *testing.T, f *fakeDynamo) *lockcore.DynamoStore {
	t.Helper()
	st, err := lockcore.NewDynamoStore(f, "locks")
	if err != nil {
		t.Fatalf("NewDynamoStore() = %v", err)
	}
	return st
}

func fakeAcquireRequest(rev string) storeapi.AcquireRequest {
	return storeapi.AcquireRequest{
		Key: fakeKey, Holder: "fn", Revision: rev, Lease: 10 * time.Second, NowMs: 1000,
		LeaseUntilMs: 11000, ExpiresAtMs: 61000, RecordAccount: "act:1/app:2", FenceBase: 5000,
	}
}

func TestNewDynamoStoreRejectsBadInput(t *testing.T) {
	_, err := lockcore.NewDynamoStore(nil, " ")
	if err == nil || !strings.Contains(err.Error(), "nil client") || !strings.Contains(err.Error(), "blank table") {
		t.Fatalf("NewDynamoStore(nil, blank) = %v, want an error naming both problems", err)
	}
	if _, err := lockcore.NewDynamoStore(&fakeDynamo{}, "t"); err != nil {
		t.Fatalf("NewDynamoStore(fake, t) = %v", err)
	}
}

func TestDynamoStoreAcquireRequest(t *testing.T) {
	// The old revision and result are copied before #rev is assigned: see
	// the minidyn notes in dynamostore.go.
	const set = "SET #prevRev = if_not_exists(#rev, :empty), #prevResult = if_not_exists(#result, :empty), " +
		"#prevFailReason = if_not_exists(#failReason, :empty), " +
		"#group = :group, #id = :id, #owner = :owner, #rev = :newRev, #leaseMs = :leaseMs, " +
		"#hb = :now, #acqAt = :now, #lu = :leaseUntil, #exp = :expiresAt, #rel = :false, #beat = :zero, " +
		"#account = :account, #fence = if_not_exists(#fence, :base) + :one"
	const remove = " REMOVE #result, #resultRef, #resultFence, #relAt, #answer"
	// Brackets only where DynamoDB's precedence needs them (the open
	// branch when it is an OR), see the note on dynalite in dynamostore.go.
	const cond = "attribute_not_exists(#lockKey) OR #rel = :true"
	const condOr = "attribute_not_exists(#lockKey) OR (#rel = :true"
	const notOwn = " AND #rev <> :newRev AND NOT #prevRev = :newRev"
	const fresh = " AND NOT (#rel = :true AND #result = :success AND #relAt >= :freshSince)"
	const heldBack = " AND NOT (#rel = :true AND #result = :failure AND #failRecentUntil > :now AND #notBefore > :now)"
	base := map[string]types.AttributeValue{
		":empty": avS(""),
		":group": avS("fx"), ":id": avS("EUR-USD"), ":owner": avS("fn"), ":newRev": avS("new"), ":leaseMs": avN("10000"),
		":now": avN("1000"), ":leaseUntil": avN("11000"), ":expiresAt": avN("61000"), ":false": avBool(false), ":true": avBool(true),
		":zero": avN("0"), ":account": avS("act:1/app:2"), ":base": avN("5000"), ":one": avN("1"),
	}
	with := func(extra map[string]types.AttributeValue) map[string]types.AttributeValue {
		m := make(map[string]types.AttributeValue, len(base)+len(extra))
		for k, v := range base {
			m[k] = v
		}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	tests := []struct {
		name       string
		edit       func(*storeapi.AcquireRequest)
		wantUpdate string
		wantCond   string
		wantValues map[string]types.AttributeValue
		wantGuards bool // the guards' names are bound
	}{
		{
			name:       "plain, no TTL",
			edit:       func(*storeapi.AcquireRequest) {},
			wantUpdate: set + remove + ", #ttl",
			wantCond:   cond + notOwn,
			wantValues: base,
		},
		{
			name:       "with TTL",
			edit:       func(r *storeapi.AcquireRequest) { r.TTL = 1234 },
			wantUpdate: set + ", #ttl = :ttl" + remove,
			wantCond:   cond + notOwn,
			wantValues: with(map[string]types.AttributeValue{":ttl": avN("1234")}),
		},
		{
			name:       "wall clock",
			edit:       func(r *storeapi.AcquireRequest) { r.UseWallClock, r.ClockAllowance = true, 1500*time.Millisecond },
			wantUpdate: set + remove + ", #ttl",
			wantCond:   condOr + " OR #exp < :nowMinusEps OR #lu < :nowMinusEps)" + notOwn,
			wantValues: with(map[string]types.AttributeValue{":nowMinusEps": avN("-500")}),
		},
		{
			name:       "observation",
			edit:       func(r *storeapi.AcquireRequest) { r.Observed = &storeapi.Observation{Revision: "old", Beat: 7} },
			wantUpdate: set + remove + ", #ttl",
			wantCond:   condOr + " OR #rev = :obsRev AND #beat = :obsBeat)" + notOwn,
			wantValues: with(map[string]types.AttributeValue{":obsRev": avS("old"), ":obsBeat": avN("7")}),
		},
		{
			name: "wall clock and observation",
			edit: func(r *storeapi.AcquireRequest) {
				r.UseWallClock, r.ClockAllowance = true, time.Second
				r.Observed = &storeapi.Observation{Revision: "old", Beat: 0}
			},
			wantUpdate: set + remove + ", #ttl",
			wantCond:   condOr + " OR #exp < :nowMinusEps OR #lu < :nowMinusEps OR #rev = :obsRev AND #beat = :obsBeat)" + notOwn,
			wantValues: with(map[string]types.AttributeValue{":nowMinusEps": avN("0"), ":obsRev": avS("old"), ":obsBeat": avN("0")}),
		},
		{
			// Defect: the fresh-success guard once applied to the released
			// branch only, so a lapsed lease got past it.
			name: "fresh success guards every branch",
			edit: func(r *storeapi.AcquireRequest) {
				r.UseWallClock, r.ClockAllowance = true, time.Second
				r.Observed = &storeapi.Observation{Revision: "old", Beat: 0}
				r.FreshSuccessSinceMs = 700
			},
			wantUpdate: set + remove + ", #ttl",
			wantCond: "attribute_not_exists(#lockKey) OR (#rel = :true OR #exp < :nowMinusEps OR #lu < :nowMinusEps OR #rev = :obsRev AND #beat = :obsBeat)" +
				fresh + notOwn,
			wantValues: with(map[string]types.AttributeValue{":nowMinusEps": avN("0"), ":obsRev": avS("old"), ":obsBeat": avN("0"),
				":success": avS("success"), ":freshSince": avN("700")}),
		},
		{
			name: "held-back failure guards every branch",
			edit: func(r *storeapi.AcquireRequest) {
				r.UseWallClock, r.ClockAllowance = true, time.Second
				r.MaxAttempts = 2
			},
			wantUpdate: set + remove + ", #ttl",
			wantCond:   "attribute_not_exists(#lockKey) OR (#rel = :true OR #exp < :nowMinusEps OR #lu < :nowMinusEps)" + heldBack + notOwn,
			wantValues: with(map[string]types.AttributeValue{":nowMinusEps": avN("0"), ":failure": avS("failure")}),
			wantGuards: true,
		},
		{
			name: "both guards",
			edit: func(r *storeapi.AcquireRequest) {
				r.FreshSuccessSinceMs = 700
				r.MaxAttempts = 1
			},
			wantUpdate: set + remove + ", #ttl",
			wantCond:   "attribute_not_exists(#lockKey) OR #rel = :true" + fresh + heldBack + notOwn,
			wantValues: with(map[string]types.AttributeValue{":success": avS("success"), ":freshSince": avN("700"),
				":failure": avS("failure")}),
			wantGuards: true,
		},
	}
	wantNames := map[string]string{
		"#lockKey": "lockKey", "#group": "lockGroup", "#id": "lockId", "#owner": "ownerName", "#rev": "revision",
		"#fence": "fence", "#beat": "beat", "#leaseMs": "leaseMs", "#hb": "heartbeatAtMs", "#lu": "leaseUntilMs",
		"#acqAt": "acquiredAtMs", "#exp": "expiresAtMs", "#rel": "isReleased", "#result": "result", "#resultRef": "resultRef",
		"#resultFence": "resultFence", "#relAt": "releasedAtMs", "#account": "recordAccount",
		"#ttl": "ttl", "#prevRev": "prevRevision", "#prevResult": "prevResult", "#answer": "answer",
		"#prevFailReason": "prevFailReason", "#failReason": "failReason",
	}
	guardNames := map[string]string{"#failRecentUntil": "failRecentUntilMs", "#notBefore": "notBeforeMs"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeDynamo{updateOut: &dynamodb.UpdateItemOutput{Attributes: storedItem("new")}}
			r := fakeAcquireRequest("new")
			tt.edit(&r)
			if _, err := newFakeStore(t, f).Acquire(t.Context(), r); err != nil {
				t.Fatalf("Acquire() = %v", err)
			}
			if len(f.updates) != 1 || len(f.gets) != 0 {
				t.Fatalf("Acquire() sent %d UpdateItem and %d GetItem, want 1 and 0", len(f.updates), len(f.gets))
			}
			in := f.updates[0]
			if got := aws.ToString(in.UpdateExpression); got != tt.wantUpdate {
				t.Errorf("UpdateExpression =\n  %s\nwant\n  %s", got, tt.wantUpdate)
			}
			if got := aws.ToString(in.ConditionExpression); got != tt.wantCond {
				t.Errorf("ConditionExpression =\n  %s\nwant\n  %s", got, tt.wantCond)
			}
			if !reflect.DeepEqual(in.ExpressionAttributeValues, tt.wantValues) {
				t.Errorf("ExpressionAttributeValues = %v, want %v", avString(in.ExpressionAttributeValues), avString(tt.wantValues))
			}
			names := maps.Clone(wantNames)
			if tt.wantGuards {
				maps.Copy(names, guardNames)
			}
			if !reflect.DeepEqual(in.ExpressionAttributeNames, names) {
				t.Errorf("ExpressionAttributeNames = %v, want %v", in.ExpressionAttributeNames, names)
			}
			checkWriteInput(t, in)
		})
	}
}

// checkWriteInput checks what every conditional write must carry.
func checkWriteInput(t *testing.T, in *dynamodb.UpdateItemInput) {
	t.Helper()
	if aws.ToString(in.TableName) != "locks" {
		t.Errorf("TableName = %q, want locks", aws.ToString(in.TableName))
	}
	if want := map[string]types.AttributeValue{"lockKey": avS("fx/EUR-USD")}; !reflect.DeepEqual(in.Key, want) {
		t.Errorf("Key = %v, want %v", avString(in.Key), avString(want))
	}
	if in.ReturnValues != types.ReturnValueAllNew {
		t.Errorf("ReturnValues = %q, want ALL_NEW", in.ReturnValues)
	}
	if in.ReturnValuesOnConditionCheckFailure != types.ReturnValuesOnConditionCheckFailureAllOld {
		t.Errorf("ReturnValuesOnConditionCheckFailure = %q, want ALL_OLD", in.ReturnValuesOnConditionCheckFailure)
	}
}

func avString(m map[string]types.AttributeValue) string {
	var parts []string
	for k, v := range m {
		switch v := v.(type) {
		case *types.AttributeValueMemberS:
			parts = append(parts, k+"=S:"+v.Value)
		case *types.AttributeValueMemberN:
			parts = append(parts, k+"=N:"+v.Value)
		case *types.AttributeValueMemberBOOL:
			parts = append(parts, k+"=BOOL:"+map[bool]string{true: "true", false: "false"}[v.Value])
		case *types.AttributeValueMemberB:
			parts = append(parts, k+"=B:"+string(v.Value))
		default:
			parts = append(parts, k+"=?")
		}
	}
	return "{" + strings.Join(parts, " ") + "}"
}

// releaseSet is Release's update: the failure attributes are set, never
// removed (see the minidyn notes in dynamostore.go).
const releaseSet = "SET #rel = :true, #relAt = :now, #result = :result, #resultRef = :ref, #resultFence = #fence, " +
	"#failures = :failures, #notBefore = :notBefore, #failReason = :failReason, #failRecentUntil = :failRecentUntil"

// holderReleaseCond is the condition of a release other than an
// operator's: it matches only an item its revision has not released, so a
// retry of an applied release writes nothing.
const holderReleaseCond = "#rev = :rev AND #rel = :false"

var releaseNames = map[string]string{"#rel": "isReleased", "#relAt": "releasedAtMs", "#result": "result",
	"#resultRef": "resultRef", "#resultFence": "resultFence", "#fence": "fence", "#rev": "revision",
	"#failures": "failures", "#notBefore": "notBeforeMs", "#failReason": "failReason", "#failRecentUntil": "failRecentUntilMs"}

// keepEpisodeSet and keepEpisodeNames are a release's update that keeps
// the episode, and its names; published is the update of the record of
// the publication, and publishedNames adds its names.
const (
	keepEpisodeSet = "SET #rel = :true, #relAt = :now, #result = :result, #resultRef = :ref, #resultFence = #fence"
	published      = ", #pubRev = :rev, #pubResult = :result"
)

var keepEpisodeNames = map[string]string{"#rel": "isReleased", "#relAt": "releasedAtMs", "#result": "result",
	"#resultRef": "resultRef", "#resultFence": "resultFence", "#fence": "fence", "#rev": "revision"}

func publishedNames(m map[string]string) map[string]string {
	return withName(withName(m, "#pubRev", "publishedRevision"), "#pubResult", "publishedResult")
}

func withName(m map[string]string, k, v string) map[string]string {
	m = maps.Clone(m)
	m[k] = v
	return m
}

func TestDynamoStoreOtherWriteRequests(t *testing.T) {
	tests := []struct {
		name       string
		call       func(context.Context, *lockcore.DynamoStore) (storeapi.Item, error)
		wantUpdate string
		wantCond   string
		wantNames  map[string]string
		wantValues map[string]types.AttributeValue
	}{
		{
			name: "renew",
			call: func(ctx context.Context, st *lockcore.DynamoStore) (storeapi.Item, error) {
				return st.Renew(ctx, storeapi.RenewRequest{Key: fakeKey, Revision: "r", NowMs: 5, LeaseUntilMs: 6})
			},
			wantUpdate: "SET #hb = :now, #lu = :leaseUntil ADD #beat :one",
			wantCond:   "#rev = :rev AND #rel = :false AND #lu <= :leaseUntil",
			wantNames:  map[string]string{"#hb": "heartbeatAtMs", "#lu": "leaseUntilMs", "#beat": "beat", "#rev": "revision", "#rel": "isReleased"},
			wantValues: map[string]types.AttributeValue{":now": avN("5"), ":leaseUntil": avN("6"), ":one": avN("1"), ":rev": avS("r"), ":false": avBool(false)},
		},
		{
			name: "release failure",
			call: func(ctx context.Context, st *lockcore.DynamoStore) (storeapi.Item, error) {
				return st.Release(ctx, storeapi.ReleaseRequest{Key: fakeKey, Revision: "r", NowMs: 7, Result: lockcore.Failure, ResultRef: "x",
					Failures: 2, NotBeforeMs: 9, FailReason: "upstream_429", FailRecentUntilMs: 11})
			},
			wantUpdate: releaseSet + published,
			wantCond:   holderReleaseCond,
			wantNames:  publishedNames(releaseNames),
			wantValues: map[string]types.AttributeValue{":true": avBool(true), ":now": avN("7"), ":result": avS("failure"),
				":ref": avS("x"), ":rev": avS("r"), ":false": avBool(false),
				":failures": avN("2"), ":notBefore": avN("9"), ":failReason": avS("upstream_429"), ":failRecentUntil": avN("11")},
		},
		{
			// An operator's force-release matches an item its holder
			// released with failure: it clears a recent failure. Its own
			// retry does not match, and writes nothing. It clears the
			// record of the last publication.
			name: "release failure by an operator",
			call: func(ctx context.Context, st *lockcore.DynamoStore) (storeapi.Item, error) {
				return st.Release(ctx, storeapi.ReleaseRequest{Key: fakeKey, Revision: "r", NowMs: 7, Result: lockcore.Failure,
					Failures: 2, FailReason: storeapi.OperatorReleaseReason})
			},
			wantUpdate: releaseSet + ", #pubRev = :empty, #pubResult = :empty",
			wantCond:   "#rev = :rev AND (#rel = :false OR #result = :result AND NOT #failReason = :opReason)",
			wantNames:  publishedNames(releaseNames),
			wantValues: map[string]types.AttributeValue{":true": avBool(true), ":now": avN("7"), ":result": avS("failure"), ":empty": avS(""),
				":ref": avS(""), ":rev": avS("r"), ":false": avBool(false), ":opReason": avS("operator_release"),
				":failures": avN("2"), ":notBefore": avN("0"), ":failReason": avS("operator_release"), ":failRecentUntil": avN("0")},
		},
		{
			// A holder's release that made no attempt: the episode stays
			// as the item has it.
			name: "release failure keeping the episode",
			call: func(ctx context.Context, st *lockcore.DynamoStore) (storeapi.Item, error) {
				return st.Release(ctx, storeapi.ReleaseRequest{Key: fakeKey, Revision: "r", NowMs: 7, Result: lockcore.Failure, KeepEpisode: true,
					Failures: 2, NotBeforeMs: 9, FailReason: "ignored", FailRecentUntilMs: 11})
			},
			wantUpdate: keepEpisodeSet + published,
			wantCond:   holderReleaseCond,
			wantNames:  publishedNames(keepEpisodeNames),
			wantValues: map[string]types.AttributeValue{":true": avBool(true), ":now": avN("7"), ":result": avS("failure"),
				":ref": avS(""), ":rev": avS("r"), ":false": avBool(false)},
		},
		{
			// Freeing a possible ghost, which nobody held: the episode
			// stays as the item has it, and so does the record of the
			// last publication.
			name: "release freeing a write nobody held",
			call: func(ctx context.Context, st *lockcore.DynamoStore) (storeapi.Item, error) {
				return st.Release(ctx, storeapi.ReleaseRequest{Key: fakeKey, Revision: "r", NowMs: 7, Result: lockcore.Failure, KeepEpisode: true,
					Unheld: true})
			},
			wantUpdate: keepEpisodeSet,
			wantCond:   holderReleaseCond,
			wantNames:  keepEpisodeNames,
			wantValues: map[string]types.AttributeValue{":true": avBool(true), ":now": avN("7"), ":result": avS("failure"),
				":ref": avS(""), ":rev": avS("r"), ":false": avBool(false)},
		},
		{
			name: "release success with an answer",
			call: func(ctx context.Context, st *lockcore.DynamoStore) (storeapi.Item, error) {
				return st.Release(ctx, storeapi.ReleaseRequest{Key: fakeKey, Revision: "r", NowMs: 7, Result: lockcore.Success, ResultRef: "x",
					Answer: []byte("42"), Failures: 2, NotBeforeMs: 9, FailReason: "ignored", FailRecentUntilMs: 11})
			},
			wantUpdate: releaseSet + ", #answer = :answer" + published,
			wantCond:   holderReleaseCond,
			wantNames:  publishedNames(withName(releaseNames, "#answer", "answer")),
			wantValues: map[string]types.AttributeValue{":true": avBool(true), ":now": avN("7"), ":result": avS("success"),
				":ref": avS("x"), ":rev": avS("r"), ":false": avBool(false), ":answer": &types.AttributeValueMemberB{Value: []byte("42")},
				":failures": avN("0"), ":notBefore": avN("0"), ":failReason": avS(""), ":failRecentUntil": avN("0")},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeDynamo{updateOut: &dynamodb.UpdateItemOutput{Attributes: storedItem("r")}}
			got, err := tt.call(t.Context(), newFakeStore(t, f))
			if err != nil || !got.Equal(decoded("r")) {
				t.Fatalf("%s() = %+v, %v, want %+v", tt.name, got, err, decoded("r"))
			}
			if len(f.updates) != 1 {
				t.Fatalf("%s() sent %d UpdateItem, want 1", tt.name, len(f.updates))
			}
			in := f.updates[0]
			if got := aws.ToString(in.UpdateExpression); got != tt.wantUpdate {
				t.Errorf("UpdateExpression = %q, want %q", got, tt.wantUpdate)
			}
			if got := aws.ToString(in.ConditionExpression); got != tt.wantCond {
				t.Errorf("ConditionExpression = %q, want %q", got, tt.wantCond)
			}
			if !reflect.DeepEqual(in.ExpressionAttributeNames, tt.wantNames) {
				t.Errorf("ExpressionAttributeNames = %v, want %v", in.ExpressionAttributeNames, tt.wantNames)
			}
			if !reflect.DeepEqual(in.ExpressionAttributeValues, tt.wantValues) {
				t.Errorf("ExpressionAttributeValues = %v, want %v", avString(in.ExpressionAttributeValues), avString(tt.wantValues))
			}
			checkWriteInput(t, in)
		})
	}
}

func TestDynamoStoreGetIsConsistent(t *testing.T) {
	f := &fakeDynamo{getOut: &dynamodb.GetItemOutput{Item: storedItem("r")}}
	got, found, err := newFakeStore(t, f).Get(t.Context(), fakeKey)
	if err != nil || !found || !got.Equal(decoded("r")) {
		t.Fatalf("Get() = %+v, %t, %v, want %+v, true, nil", got, found, err, decoded("r"))
	}
	in := f.gets[0]
	if !aws.ToBool(in.ConsistentRead) || aws.ToString(in.TableName) != "locks" ||
		!reflect.DeepEqual(in.Key, map[string]types.AttributeValue{"lockKey": avS("fx/EUR-USD")}) {
		t.Errorf("GetItem input = consistent %v, table %q, key %v; want consistent, locks, lockKey fx/EUR-USD",
			aws.ToBool(in.ConsistentRead), aws.ToString(in.TableName), avString(in.Key))
	}
	f.getOut = &dynamodb.GetItemOutput{}
	if got, found, err := newFakeStore(t, f).Get(t.Context(), fakeKey); err != nil || found || !got.Equal(storeapi.Item{}) {
		t.Fatalf("Get(absent) = %+v, %t, %v, want zero, false, nil", got, found, err)
	}
}

// TestDynamoStoreConditionFailure covers both ways a failed condition learns
// the current item: from the exception (ALL_OLD) or from a consistent read
// (servers without ALL_OLD), and our own revision recognised in each.
func TestDynamoStoreConditionFailure(t *testing.T) {
	held := func(av map[string]types.AttributeValue) map[string]types.AttributeValue {
		av[storeapi.AttrIsReleased] = avBool(false)
		return av
	}
	heldItem := func(it storeapi.Item) storeapi.Item {
		it.Released = false
		return it
	}
	tests := []struct {
		name      string
		oldItem   map[string]types.AttributeValue // in the exception
		getOut    *dynamodb.GetItemOutput
		wantGets  int
		wantErr   bool
		wantCur   *storeapi.Item // in the ConditionError, or nil
		wantItem  storeapi.Item  // returned on success
		wantNoErr bool
	}{
		{name: "ALL_OLD, other holder", oldItem: storedItem("other"), wantGets: 0, wantErr: true, wantCur: itemPtr(decoded("other"))},
		{name: "ALL_OLD, own revision", oldItem: held(storedItem("new")), wantGets: 0, wantItem: heldItem(decoded("new"))},
		{name: "ALL_OLD, own revision released since", oldItem: storedItem("new"), wantGets: 0, wantErr: true, wantCur: itemPtr(decoded("new"))},
		{name: "fallback read, other holder", getOut: &dynamodb.GetItemOutput{Item: storedItem("other")}, wantGets: 1, wantErr: true, wantCur: itemPtr(decoded("other"))},
		{name: "fallback read, own revision", getOut: &dynamodb.GetItemOutput{Item: held(storedItem("new"))}, wantGets: 1, wantItem: heldItem(decoded("new"))},
		{name: "fallback read, no item", getOut: &dynamodb.GetItemOutput{}, wantGets: 1, wantErr: true, wantCur: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeDynamo{
				updateErr: &types.ConditionalCheckFailedException{Message: aws.String("The conditional request failed"), Item: tt.oldItem},
				getOut:    tt.getOut,
			}
			got, err := newFakeStore(t, f).Acquire(t.Context(), fakeAcquireRequest("new"))
			if len(f.gets) != tt.wantGets {
				t.Errorf("GetItem calls = %d, want %d", len(f.gets), tt.wantGets)
			}
			if len(f.gets) > 0 && !aws.ToBool(f.gets[0].ConsistentRead) {
				t.Errorf("fallback GetItem ConsistentRead = false, want true")
			}
			if !tt.wantErr {
				if err != nil || !got.Equal(tt.wantItem) {
					t.Fatalf("Acquire() = %+v, %v, want %+v, nil", got, err, tt.wantItem)
				}
				return
			}
			var ce *storeapi.ConditionError
			if !errors.As(err, &ce) || ce.Op != "acquire" {
				t.Fatalf("Acquire() = %v, want *ConditionError for acquire", err)
			}
			if !reflect.DeepEqual(ce.Current, tt.wantCur) {
				t.Errorf("ConditionError.Current = %+v, want %+v", ce.Current, tt.wantCur)
			}
		})
	}
}

func itemPtr[T any](v T) *T { return &v }

func TestDynamoStoreOwnRevisionOnlyForAcquire(t *testing.T) {
	// A renewal refused on an item that carries our revision (it is
	// released) is still a condition failure.
	f := &fakeDynamo{updateErr: &types.ConditionalCheckFailedException{Item: storedItem("r")}}
	_, err := newFakeStore(t, f).Renew(t.Context(), storeapi.RenewRequest{Key: fakeKey, Revision: "r"})
	var ce *storeapi.ConditionError
	if !errors.As(err, &ce) || ce.Op != "renew" || ce.Current == nil || !ce.Current.Equal(decoded("r")) {
		t.Fatalf("Renew() = %v, want *ConditionError for renew with the released item", err)
	}
}

// TestDynamoStoreRenewKeepsALaterLease: when the stored lease already ends
// later, Renew's second write moves the heartbeat and the beat only.
func TestDynamoStoreRenewKeepsALaterLease(t *testing.T) {
	live := storedItem("r")
	live[storeapi.AttrIsReleased] = avBool(false)
	live[storeapi.AttrLeaseUntilMs] = avN("20000") // later than the request's 6
	f := &fakeDynamo{updateSeq: []fakeReply{
		{err: &types.ConditionalCheckFailedException{Item: live}},
		{out: &dynamodb.UpdateItemOutput{Attributes: live}},
	}}
	if _, err := newFakeStore(t, f).Renew(t.Context(), storeapi.RenewRequest{Key: fakeKey, Revision: "r", NowMs: 5, LeaseUntilMs: 6}); err != nil {
		t.Fatalf("Renew() = %v, want the beat moved", err)
	}
	if len(f.updates) != 2 {
		t.Fatalf("Renew() sent %d UpdateItem, want 2", len(f.updates))
	}
	in := f.updates[1]
	if got, want := aws.ToString(in.UpdateExpression), "SET #hb = :now ADD #beat :one"; got != want {
		t.Errorf("second UpdateExpression = %q, want %q", got, want)
	}
	if got, want := aws.ToString(in.ConditionExpression), "#rev = :rev AND #rel = :false"; got != want {
		t.Errorf("second ConditionExpression = %q, want %q", got, want)
	}
	wantNames := map[string]string{"#hb": "heartbeatAtMs", "#beat": "beat", "#rev": "revision", "#rel": "isReleased"}
	if !reflect.DeepEqual(in.ExpressionAttributeNames, wantNames) {
		t.Errorf("second ExpressionAttributeNames = %v, want %v", in.ExpressionAttributeNames, wantNames)
	}
	if _, ok := in.ExpressionAttributeValues[":leaseUntil"]; ok {
		t.Errorf("second write binds :leaseUntil, which it does not use")
	}
	checkWriteInput(t, in)

	// Refused for another reason (released, another revision): no second write.
	for _, cur := range []map[string]types.AttributeValue{storedItem("r"), storedItem("other")} {
		f := &fakeDynamo{updateErr: &types.ConditionalCheckFailedException{Item: cur}}
		if _, err := newFakeStore(t, f).Renew(t.Context(), storeapi.RenewRequest{Key: fakeKey, Revision: "r", NowMs: 5, LeaseUntilMs: 6}); !errors.Is(err, storeapi.ErrConditionFailed) || len(f.updates) != 1 {
			t.Errorf("Renew(refused) = %v after %d writes, want a condition failure after 1", err, len(f.updates))
		}
	}
}

// TestDynamoStoreReleaseRecognisesOwnPublication: a refused release whose
// item shows our revision and result as the previous ones succeeds.
func TestDynamoStoreReleaseRecognisesOwnPublication(t *testing.T) {
	cur := storedItem("newcomer")
	cur[storeapi.AttrPrevRevision], cur[storeapi.AttrPrevResult] = avS("r"), avS("success")
	f := &fakeDynamo{updateErr: &types.ConditionalCheckFailedException{Item: cur}}
	got, err := newFakeStore(t, f).Release(t.Context(), storeapi.ReleaseRequest{Key: fakeKey, Revision: "r", Result: lockcore.Success})
	if err != nil || got.Revision != "newcomer" {
		t.Fatalf("Release(retry after a newcomer) = %+v, %v, want the newcomer's item and nil", got, err)
	}
	_, err = newFakeStore(t, f).Release(t.Context(), storeapi.ReleaseRequest{Key: fakeKey, Revision: "r", Result: lockcore.Failure})
	if !errors.Is(err, storeapi.ErrConditionFailed) {
		t.Errorf("Release(other result) = %v, want a condition failure", err)
	}
}

func TestDynamoStoreItemTooLarge(t *testing.T) {
	f := &fakeDynamo{updateErr: &smithy.GenericAPIError{Code: "ValidationException", Message: "Item size to update has exceeded the maximum allowed size"}}
	_, err := newFakeStore(t, f).Release(t.Context(), storeapi.ReleaseRequest{Key: fakeKey, Revision: "r", Result: lockcore.Success})
	if !errors.Is(err, storeapi.ErrItemTooLarge) {
		t.Errorf("Release() = %v, want ErrItemTooLarge", err)
	}
	f.updateErr = &smithy.GenericAPIError{Code: "ValidationException", Message: "something else"}
	_, err = newFakeStore(t, f).Release(t.Context(), storeapi.ReleaseRequest{Key: fakeKey, Revision: "r", Result: lockcore.Success})
	if err == nil || errors.Is(err, storeapi.ErrItemTooLarge) {
		t.Errorf("Release(other validation error) = %v, want a plain error", err)
	}
}

func TestDynamoStoreErrors(t *testing.T) {
	boom := errors.New("boom")
	without := func(name string) map[string]types.AttributeValue {
		m := storedItem("x")
		delete(m, name)
		return m
	}
	with := func(name string, v types.AttributeValue) map[string]types.AttributeValue {
		m := storedItem("x")
		m[name] = v
		return m
	}
	tests := []struct {
		name    string
		f       *fakeDynamo
		wantIs  error
		wantMsg string
	}{
		{"update error", &fakeDynamo{updateErr: boom}, boom, "lockcore: dynamodb acquire: boom"},
		{"fallback read error", &fakeDynamo{updateErr: &types.ConditionalCheckFailedException{}, getErr: boom}, boom, "condition failed, then reading the item: boom"},
		{"empty response", &fakeDynamo{updateOut: &dynamodb.UpdateItemOutput{}}, nil, "no item in the response"},
		{"missing revision", &fakeDynamo{updateOut: &dynamodb.UpdateItemOutput{Attributes: without(storeapi.AttrRevision)}}, nil, "missing revision"},
		{"missing fence and beat", &fakeDynamo{updateOut: &dynamodb.UpdateItemOutput{Attributes: without(storeapi.AttrFence)}}, nil, "missing fence"},
		{"fence not a number", &fakeDynamo{updateOut: &dynamodb.UpdateItemOutput{Attributes: with(storeapi.AttrFence, avS("7"))}}, nil, "malformed lock item"},
		{"fence not an integer", &fakeDynamo{updateOut: &dynamodb.UpdateItemOutput{Attributes: with(storeapi.AttrFence, avN("1.5"))}}, nil, "malformed lock item"},
		{"released not a bool", &fakeDynamo{updateOut: &dynamodb.UpdateItemOutput{Attributes: with(storeapi.AttrIsReleased, avS("yes"))}}, nil, "malformed lock item"},
		{"unknown result", &fakeDynamo{updateOut: &dynamodb.UpdateItemOutput{Attributes: with(storeapi.AttrResult, avS("maybe"))}}, nil, `result "maybe"`},
		{"malformed ALL_OLD item", &fakeDynamo{updateErr: &types.ConditionalCheckFailedException{Item: without(storeapi.AttrIsReleased)}}, nil, "missing isReleased"},
		{"malformed fallback item", &fakeDynamo{updateErr: &types.ConditionalCheckFailedException{}, getOut: &dynamodb.GetItemOutput{Item: without(storeapi.AttrLockKey)}}, nil, "missing lockKey"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := newFakeStore(t, tt.f).Acquire(t.Context(), fakeAcquireRequest("new"))
			if err == nil || !strings.Contains(err.Error(), tt.wantMsg) || !strings.HasPrefix(err.Error(), "lockcore: dynamodb acquire") {
				t.Fatalf("Acquire() = %v, want an error starting %q and containing %q", err, "lockcore: dynamodb acquire", tt.wantMsg)
			}
			if errors.Is(err, storeapi.ErrConditionFailed) {
				t.Errorf("Acquire() = %v matches ErrConditionFailed, want a plain error", err)
			}
			if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Errorf("errors.Is(%v, %v) = false, want true", err, tt.wantIs)
			}
		})
	}
}

func TestDynamoStoreRejectsBadRequests(t *testing.T) {
	f := &fakeDynamo{}
	st := newFakeStore(t, f)
	ctx := t.Context()
	if _, err := st.Acquire(ctx, fakeAcquireRequest("")); err == nil {
		t.Errorf("Acquire(empty revision) = nil error, want error")
	}
	if _, err := st.Renew(ctx, storeapi.RenewRequest{Key: fakeKey}); err == nil {
		t.Errorf("Renew(empty revision) = nil error, want error")
	}
	if _, err := st.Release(ctx, storeapi.ReleaseRequest{Key: fakeKey, Revision: "r", Result: "maybe"}); err == nil {
		t.Errorf("Release(invalid result) = nil error, want error")
	}
	if _, err := st.Release(ctx, storeapi.ReleaseRequest{Key: fakeKey, Revision: "r", Result: lockcore.Failure, Answer: []byte("x")}); err == nil {
		t.Errorf("Release(failure with an answer) = nil error, want error")
	}
	big := storeapi.ReleaseRequest{Key: fakeKey, Revision: "r", Result: lockcore.Success, Answer: make([]byte, lockcore.MaxAnswerBytes+1)}
	if _, err := st.Release(ctx, big); !errors.Is(err, lockcore.ErrAnswerTooLarge) {
		t.Errorf("Release(answer too large) = %v, want ErrAnswerTooLarge", err)
	}
	if _, err := st.Acquire(ctx, storeapi.AcquireRequest{Key: lockcore.Key{Group: "g", ID: "\xff"}, Revision: "r"}); err == nil {
		t.Errorf("Acquire(id not UTF-8) = nil error, want error")
	}
	if len(f.updates) != 0 {
		t.Errorf("bad requests sent %d UpdateItem, want 0", len(f.updates))
	}
}

// fakeTables is a scripted lockcore.TableAPI.
type fakeTables struct {
	mu        sync.Mutex // guards all fields
	createErr error
	statuses  []types.TableStatus // returned in turn; the last one repeats
	describes int
	created   *dynamodb.CreateTableInput
}

func (f *fakeTables) CreateTable(_ context.Context, in *dynamodb.CreateTableInput, _ ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.created = in
	return &dynamodb.CreateTableOutput{}, f.createErr
}

func (f *fakeTables) DescribeTable(context.Context, *dynamodb.DescribeTableInput, ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	st := f.statuses[min(f.describes, len(f.statuses)-1)]
	f.describes++
	return &dynamodb.DescribeTableOutput{Table: &types.TableDescription{TableStatus: st}}, nil
}

func TestCreateTable(t *testing.T) {
	tests := []struct {
		name          string
		createErr     error
		statuses      []types.TableStatus
		wantErr       string // "" for success
		wantDescribes int
	}{
		{"active at once", nil, []types.TableStatus{types.TableStatusActive}, "", 1},
		{"creating, then active", nil, []types.TableStatus{types.TableStatusCreating, types.TableStatusCreating, types.TableStatusActive}, "", 3},
		{"empty status counts as active (minidyn)", nil, []types.TableStatus{""}, "", 1},
		{"already exists", &types.ResourceInUseException{}, []types.TableStatus{types.TableStatusActive}, "", 1},
		{"create fails", errors.New("denied"), nil, "denied", 0},
		{"deleting", nil, []types.TableStatus{types.TableStatusDeleting}, "status DELETING", 1},
		{"never active", nil, []types.TableStatus{types.TableStatusCreating}, "waiting until active", -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Polling waits on timers; in a bubble they fire on fake time.
			synctest.Test(t, func(t *testing.T) {
				f := &fakeTables{createErr: tt.createErr, statuses: tt.statuses}
				err := lockcore.CreateTable(t.Context(), f, "locks")
				if tt.wantErr == "" && err != nil {
					t.Fatalf("CreateTable() = %v, want nil", err)
				}
				if tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
					t.Fatalf("CreateTable() = %v, want an error containing %q", err, tt.wantErr)
				}
				if tt.wantDescribes >= 0 && f.describes != tt.wantDescribes {
					t.Errorf("DescribeTable calls = %d, want %d", f.describes, tt.wantDescribes)
				}
				in := f.created
				if in == nil || aws.ToString(in.TableName) != "locks" || in.BillingMode != types.BillingModePayPerRequest ||
					len(in.KeySchema) != 1 || aws.ToString(in.KeySchema[0].AttributeName) != storeapi.AttrLockKey ||
					in.KeySchema[0].KeyType != types.KeyTypeHash || len(in.AttributeDefinitions) != 1 ||
					in.AttributeDefinitions[0].AttributeType != types.ScalarAttributeTypeS {
					t.Errorf("CreateTable input = %+v, want table locks, PAY_PER_REQUEST, lockKey S HASH", in)
				}
			})
		})
	}
	if err := lockcore.CreateTable(t.Context(), nil, "x"); err == nil {
		t.Errorf("CreateTable(nil client) = nil, want error")
	}
}
