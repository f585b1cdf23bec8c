package capacity_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/herdlock/herdlock/internal/capacity"
	"github.com/herdlock/herdlock/internal/dynalite"
	"github.com/herdlock/herdlock/internal/dynoxide/dynoxidetest"
)

const table = "items"

// manualClock is a clock that moves only when told.
type manualClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *manualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *manualClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// start returns a capacity proxy in front of a Dynoxide server with a
// table created, a client through it that never retries, and the clock.
func start(t *testing.T, cfg capacity.Config) (*capacity.Proxy, *dynamodb.Client, *manualClock) {
	t.Helper()
	clock := &manualClock{t: time.Unix(1_700_000_000, 0)}
	cfg.Upstream = dynoxidetest.Start(t).Endpoint()
	cfg.Now = clock.Now
	p, err := capacity.New(cfg)
	if err != nil {
		t.Fatalf("New() = %v", err)
	}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	client := dynalite.NewClient(srv.URL, func(o *dynamodb.Options) {
		o.Retryer = retry.AddWithMaxAttempts(o.Retryer, 1)
	})
	ctx := context.Background()
	_, err = client.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String(table),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
	})
	if err != nil {
		t.Fatalf("CreateTable() = %v", err)
	}
	return p, client, clock
}

func key(pk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: pk}}
}

func update(ctx context.Context, c *dynamodb.Client, pk string, cond bool) error {
	in := &dynamodb.UpdateItemInput{
		TableName:                 aws.String(table),
		Key:                       key(pk),
		UpdateExpression:          aws.String("ADD n :one"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":one": &types.AttributeValueMemberN{Value: "1"}},
		ReturnValues:              types.ReturnValueAllNew,
	}
	if cond {
		in.ConditionExpression = aws.String("attribute_not_exists(pk)")
		in.ReturnValuesOnConditionCheckFailure = types.ReturnValuesOnConditionCheckFailureAllOld
	}
	_, err := c.UpdateItem(ctx, in)
	return err
}

func get(ctx context.Context, c *dynamodb.Client, pk string, consistent bool) error {
	_, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: key(pk), ConsistentRead: aws.Bool(consistent)})
	return err
}

func TestWriteThrottleDecodesAsProvisionedThroughputExceeded(t *testing.T) {
	p, c, clock := start(t, capacity.Config{WriteUnits: 10, Burst: time.Second})
	ctx := context.Background()
	for i := range 10 {
		if err := update(ctx, c, "a", false); err != nil {
			t.Fatalf("UpdateItem #%d within the burst = %v, want nil", i, err)
		}
	}
	err := update(ctx, c, "a", false)
	var pt *types.ProvisionedThroughputExceededException
	if !errors.As(err, &pt) {
		t.Fatalf("UpdateItem past the burst = %v, want a *types.ProvisionedThroughputExceededException", err)
	}
	want := types.ThrottlingReason{Reason: aws.String(capacity.ReasonWriteKeyRange), Resource: aws.String("arn:aws:dynamodb:us-east-1:000000000000:table/items")}
	if len(pt.ThrottlingReasons) != 1 || aws.ToString(pt.ThrottlingReasons[0].Reason) != *want.Reason || aws.ToString(pt.ThrottlingReasons[0].Resource) != *want.Resource {
		t.Errorf("ThrottlingReasons = %+v, want [%s %s]", pt.ThrottlingReasons, *want.Reason, *want.Resource)
	}
	// Another item has its own bucket.
	if err := update(ctx, c, "b", false); err != nil {
		t.Errorf("UpdateItem on another item = %v, want nil", err)
	}
	// A tenth of a second refills one unit at 10 WCU/s.
	clock.Advance(100 * time.Millisecond)
	if err := update(ctx, c, "a", false); err != nil {
		t.Errorf("UpdateItem after the refill = %v, want nil", err)
	}
	if err := update(ctx, c, "a", false); err == nil {
		t.Errorf("second UpdateItem after a one-unit refill = nil, want a throttle")
	}
	s := p.Item(capacity.ItemKey(table, "pk", "a"))
	if got := s.Ops["UpdateItem"]; got.Requests != 13 || got.Throttled != 2 || got.Units != 11 {
		t.Errorf("UpdateItem stats = %+v, want 13 requests, 2 throttled, 11 units", got)
	}
	if s.WriteUnits != 11 || s.Writes() != 13 {
		t.Errorf("WriteUnits, Writes() = %v, %d, want 11, 13", s.WriteUnits, s.Writes())
	}
}

func TestReadThrottleDecodesAsThrottlingException(t *testing.T) {
	_, c, _ := start(t, capacity.Config{ReadUnits: 2, Exception: capacity.Throttling})
	ctx := context.Background()
	for i := range 2 {
		if err := get(ctx, c, "a", true); err != nil {
			t.Fatalf("GetItem #%d = %v, want nil", i, err)
		}
	}
	err := get(ctx, c, "a", true)
	var te *types.ThrottlingException
	if !errors.As(err, &te) {
		t.Fatalf("GetItem past the burst = %v, want a *types.ThrottlingException", err)
	}
	if len(te.ThrottlingReasons) != 1 || aws.ToString(te.ThrottlingReasons[0].Reason) != capacity.ReasonReadKeyRange ||
		!strings.HasSuffix(aws.ToString(te.ThrottlingReasons[0].Resource), ":table/items") {
		t.Errorf("ThrottlingReasons = %+v, want [%s …:table/items]", te.ThrottlingReasons, capacity.ReasonReadKeyRange)
	}
}

// The SDK's standard retryer classifies the answers as throttles and
// retries them; with a zero-backoff retryer a refill between attempts lets
// the retry through.
func TestThrottleIsRetriedByTheSDK(t *testing.T) {
	p, c, _ := start(t, capacity.Config{WriteUnits: 1})
	ctx := context.Background()
	if err := update(ctx, c, "a", false); err != nil {
		t.Fatalf("first UpdateItem = %v", err)
	}
	calls := 0
	err := update(ctx, c, "a", false)
	_, err2 := c.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(table), Key: key("a"), UpdateExpression: aws.String("ADD n :one"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":one": &types.AttributeValueMemberN{Value: "1"}},
	}, func(o *dynamodb.Options) {
		o.Retryer = retry.NewStandard(func(so *retry.StandardOptions) {
			so.MaxAttempts = 3
			so.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { calls++; return 0, nil })
		})
	})
	if err == nil || err2 == nil {
		t.Fatalf("UpdateItem on an empty bucket = %v, %v, want throttles", err, err2)
	}
	if calls != 2 {
		t.Errorf("retry delays asked = %d, want 2 (the throttle is retryable)", calls)
	}
	if got := p.Item(capacity.ItemKey(table, "pk", "a")).Ops["UpdateItem"]; got.Throttled != 4 {
		t.Errorf("throttled = %d, want 4 (1 + 3 attempts)", got.Throttled)
	}
}

func TestChargesFailedConditionsAndReads(t *testing.T) {
	p, c, _ := start(t, capacity.Config{})
	ctx := context.Background()
	if err := update(ctx, c, "a", true); err != nil {
		t.Fatalf("conditional UpdateItem on an absent item = %v", err)
	}
	var ccf *types.ConditionalCheckFailedException
	if err := update(ctx, c, "a", true); !errors.As(err, &ccf) {
		t.Fatalf("conditional UpdateItem on a present item = %v, want a condition failure", err)
	}
	for _, consistent := range []bool{true, false} {
		if err := get(ctx, c, "a", consistent); err != nil {
			t.Fatalf("GetItem = %v", err)
		}
	}
	if err := get(ctx, c, "absent", false); err != nil {
		t.Fatalf("GetItem = %v", err)
	}
	s := p.Item(capacity.ItemKey(table, "pk", "a"))
	if got := s.Ops["UpdateItem"]; got.Requests != 2 || got.ConditionFailed != 1 || got.Units != 2 {
		t.Errorf("UpdateItem stats = %+v, want 2 requests, 1 condition failed, 2 WCU (a failed condition costs one)", got)
	}
	if got := s.Ops["GetItem"]; got.Requests != 2 || got.Units != 1.5 {
		t.Errorf("GetItem stats = %+v, want 2 requests, 1.5 RCU (consistent 1, eventual 0.5)", got)
	}
	if got := p.Item(capacity.ItemKey(table, "pk", "absent")).ReadUnits; got != 0.5 {
		t.Errorf("RCU of an eventual read of an absent item = %v, want 0.5", got)
	}
}

// Large items cost by size: 1 WCU per started KB of the larger of old and
// new, 1 RCU per started 4 KB.
func TestChargesBySize(t *testing.T) {
	p, c, _ := start(t, capacity.Config{})
	ctx := context.Background()
	blob := strings.Repeat("x", 5000) // with names and key: just over 5,000 bytes
	_, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: "big"}, "blob": &types.AttributeValueMemberS{Value: blob},
	}})
	if err != nil {
		t.Fatalf("PutItem = %v", err)
	}
	if err := update(ctx, c, "big", false); err != nil { // old and new ~5 KB
		t.Fatalf("UpdateItem = %v", err)
	}
	if err := get(ctx, c, "big", true); err != nil {
		t.Fatalf("GetItem = %v", err)
	}
	s := p.Item(capacity.ItemKey(table, "pk", "big"))
	if got := s.Ops["PutItem"].Units; got != 5 {
		t.Errorf("PutItem WCU = %v, want 5", got)
	}
	if got := s.Ops["UpdateItem"].Units; got != 5 {
		t.Errorf("UpdateItem WCU = %v, want 5", got)
	}
	if got := s.Ops["GetItem"].Units; got != 2 {
		t.Errorf("consistent GetItem RCU = %v, want 2", got)
	}
	_, err = c.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(table), Key: key("big")})
	if err != nil {
		t.Fatalf("DeleteItem = %v", err)
	}
	if got := p.Item(capacity.ItemKey(table, "pk", "big")).Ops["DeleteItem"].Units; got != 5 {
		t.Errorf("DeleteItem WCU = %v, want 5", got)
	}
}

func TestSetRates(t *testing.T) {
	p, c, clock := start(t, capacity.Config{WriteUnits: 100})
	ctx := context.Background()
	if err := p.SetRates(2, 2); err != nil {
		t.Fatalf("SetRates() = %v", err)
	}
	var throttled int
	for range 5 {
		if update(ctx, c, "a", false) != nil {
			throttled++
		}
	}
	if throttled != 3 {
		t.Errorf("throttled = %d of 5 at a burst of 2, want 3", throttled)
	}
	clock.Advance(time.Second)
	if err := p.SetRates(100, 100); err != nil {
		t.Fatalf("SetRates() = %v", err)
	}
	if err := update(ctx, c, "a", false); err != nil {
		t.Errorf("UpdateItem after raising the rates = %v", err)
	}
	if err := p.SetRates(0, 1); err == nil {
		t.Errorf("SetRates(0, 1) = nil, want an error")
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	tests := []struct {
		name string
		cfg  capacity.Config
	}{
		{"no upstream", capacity.Config{}},
		{"negative rate", capacity.Config{Upstream: "http://x", WriteUnits: -1}},
		{"unknown exception", capacity.Config{Upstream: "http://x", Exception: "Nope"}},
	}
	for _, tt := range tests {
		if _, err := capacity.New(tt.cfg); err == nil {
			t.Errorf("New(%s) = nil error, want one", tt.name)
		}
	}
}

// Through dynalite, which sends x-amz-crc32 and returns no item with a
// failed condition: the model still charges and throttles. The buckets
// hold 3 units and refill one in 33 s, so the test needs no fast machine.
func TestDynalite(t *testing.T) {
	srv, err := dynalite.Start(context.Background())
	if err != nil {
		t.Fatalf("dynalite.Start() = %v", err)
	}
	t.Cleanup(func() { srv.Close() })
	chargesAndThrottles(t, srv.Endpoint())
}

// chargesAndThrottles puts the model in front of the server at endpoint and
// checks that a write, two failed conditions and a throttle are charged and
// answered as DynamoDB would.
func chargesAndThrottles(t *testing.T, endpoint string) {
	t.Helper()
	p, err := capacity.New(capacity.Config{Upstream: endpoint, WriteUnits: 0.03, ReadUnits: 0.03, Burst: 100 * time.Second})
	if err != nil {
		t.Fatalf("New() = %v", err)
	}
	hs := httptest.NewServer(p)
	t.Cleanup(hs.Close)
	c := dynalite.NewClient(hs.URL, func(o *dynamodb.Options) { o.Retryer = retry.AddWithMaxAttempts(o.Retryer, 1) })
	ctx := context.Background()
	_, err = c.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String(table),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
	})
	if err != nil {
		t.Fatalf("CreateTable() = %v", err)
	}
	waitActive(t, c)
	var results []string
	for range 4 {
		err := update(ctx, c, "a", true)
		var ccf *types.ConditionalCheckFailedException
		var pt *types.ProvisionedThroughputExceededException
		switch {
		case err == nil:
			results = append(results, "ok")
		case errors.As(err, &ccf):
			results = append(results, "condition")
		case errors.As(err, &pt):
			results = append(results, "throttled")
		default:
			t.Fatalf("UpdateItem = %v", err)
		}
	}
	if got := strings.Join(results, ","); got != "ok,condition,condition,throttled" {
		t.Errorf("results = %s, want ok,condition,condition,throttled", got)
	}
	if got := p.Item(capacity.ItemKey(table, "pk", "a")).WriteUnits; got != 3 {
		t.Errorf("WCU = %v, want 3", got)
	}
}

func waitActive(t *testing.T, c *dynamodb.Client) {
	t.Helper()
	for range 100 {
		out, err := c.DescribeTable(context.Background(), &dynamodb.DescribeTableInput{TableName: aws.String(table)})
		if err == nil && out.Table.TableStatus == types.TableStatusActive {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("table %s not active", table)
}
