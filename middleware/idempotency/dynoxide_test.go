package idempotency_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/herdlock/herdlock/internal/dynalite"
	"github.com/herdlock/herdlock/internal/dynoxide/dynoxidetest"
	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/lockcore/storeapi"
	"github.com/herdlock/herdlock/middleware/idempotency"
	"github.com/herdlock/herdlock/middleware/lockmw"
)

// On Dynoxide, the record is one lock item whose attributes carry their
// units in their names: releasedAtMs in Unix milliseconds, ttl in Unix
// seconds (DynamoDB's TTL), a day past the retention; the answer holds the
// fingerprint and the holder's completion in milliseconds.
func TestRecordAttributesOnDynoxide(t *testing.T) {
	srv := dynoxidetest.Start(t)
	client := dynalite.NewClient(srv.Endpoint())
	if err := lockcore.CreateTable(t.Context(), client, "locks"); err != nil {
		t.Fatalf("CreateTable() = %v", err)
	}
	store, err := lockcore.NewDynamoStore(client, "locks")
	if err != nil {
		t.Fatal(err)
	}
	c := &counter{}
	h := wrap(t, c, store, idempotency.WithLockmwOptions(lockmw.WithLockGroup("payments")), idempotency.WithKeys(idempotency.Keys{Prefix: "charge"}))
	start := time.Now()
	first, err := invoke(t, h, time.Minute, order{Key: "o-1", Amount: 5})
	if err != nil {
		t.Fatal(err)
	}
	if again, err := invoke(t, wrap(t, c, store, idempotency.WithLockmwOptions(lockmw.WithLockGroup("payments")), idempotency.WithKeys(idempotency.Keys{Prefix: "charge"})), time.Minute, order{Key: "o-1", Amount: 5}); err != nil || again != first {
		t.Fatalf("replay = %+v, %v; want %+v", again, err, first)
	}
	end := time.Now()
	out, err := client.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName:      aws.String("locks"),
		Key:            map[string]types.AttributeValue{storeapi.AttrLockKey: &types.AttributeValueMemberS{Value: storeapi.PartitionKey(lockcore.Key{Group: "payments", ID: "charge#o-1"})}},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil || out.Item == nil {
		t.Fatalf("GetItem() = %v, %v", out, err)
	}
	num := func(name string) int64 {
		n, ok := out.Item[name].(*types.AttributeValueMemberN)
		if !ok {
			t.Fatalf("attribute %s = %v, want a number", name, out.Item[name])
		}
		v, err := strconv.ParseInt(n.Value, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	if at := num(storeapi.AttrReleasedAtMs); at < start.UnixMilli() || at > end.UnixMilli() {
		t.Errorf("%s = %d, want Unix milliseconds in [%d, %d]", storeapi.AttrReleasedAtMs, at, start.UnixMilli(), end.UnixMilli())
	}
	wantTTL := start.Add(time.Hour + 24*time.Hour).Unix()
	if ttl := num(storeapi.AttrTTL); ttl < wantTTL || ttl > wantTTL+int64(end.Sub(start)/time.Second)+1 {
		t.Errorf("%s = %d, want Unix seconds about %d (a day past the retention)", storeapi.AttrTTL, ttl, wantTTL)
	}
	if r, _ := out.Item[storeapi.AttrResult].(*types.AttributeValueMemberS); r == nil || r.Value != string(lockcore.Success) {
		t.Errorf("%s = %v, want %q", storeapi.AttrResult, out.Item[storeapi.AttrResult], lockcore.Success)
	}
	answer, _ := out.Item[storeapi.AttrAnswer].(*types.AttributeValueMemberB)
	if answer == nil {
		t.Fatalf("%s = %v, want the inline answer", storeapi.AttrAnswer, out.Item[storeapi.AttrAnswer])
	}
	head, _, _ := strings.Cut(string(answer.Value[1:]), "\n") // after lockmw's format byte
	f := strings.Fields(head)
	if len(f) != 4 || f[0] != "idem1" || !strings.HasPrefix(f[1], "sha256:") {
		t.Fatalf("answer header = %q, want idem1, the fingerprint, completedAtMs and the fence", head)
	}
	if ms, _ := strconv.ParseInt(f[2], 10, 64); ms < start.UnixMilli() || ms > end.UnixMilli() {
		t.Errorf("completedAtMs = %s, want Unix milliseconds in [%d, %d]", f[2], start.UnixMilli(), end.UnixMilli())
	}
	if f[3] != strconv.FormatInt(num(storeapi.AttrResultFence), 10) {
		t.Errorf("the answer's fence = %s, want the record's %s %d", f[3], storeapi.AttrResultFence, num(storeapi.AttrResultFence))
	}
	if got := c.runs.Load(); got != 1 {
		t.Errorf("handler runs = %d, want 1", got)
	}
}
