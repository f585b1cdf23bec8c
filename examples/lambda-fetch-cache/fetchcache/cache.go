package fetchcache

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
)

// Attribute names of a cache item. The table's partition key is
// CacheAttrID (type S); CacheAttrTTL (Unix epoch seconds) is the table's
// TTL attribute, which deletes old entries eventually. Freshness is decided
// by CacheAttrFreshUntilMs on every read, never by TTL deletion, which can
// lag by days.
const (
	CacheAttrID           = "id"
	CacheAttrData         = "data"
	CacheAttrFence        = "fence"
	CacheAttrFetchedAtMs  = "fetchedAtMs"
	CacheAttrFreshUntilMs = "freshUntilMs"
	CacheAttrTTL          = "ttl"
)

// cacheTTLGrace is how long past its freshness an entry stays before the
// table's TTL may delete it, so waiters of a slow burst can still read it.
const cacheTTLGrace = time.Hour

// ErrStaleFence: the cache already holds an entry written with a higher
// fence, so this write was refused.
var ErrStaleFence = errors.New("cache: refused: a newer fence already wrote this item")

// CacheAPI is the part of the DynamoDB API the cache calls. template.yaml
// grants exactly these actions on the cache table.
type CacheAPI interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
}

var _ CacheAPI = (*dynamodb.Client)(nil)

// Entry is one cached upstream answer.
type Entry struct {
	ID         string
	Data       json.RawMessage
	Fence      int64 // the fence of the lock holder that wrote it
	FetchedAt  time.Time
	FreshUntil time.Time
}

// fresh reports whether e may still be served at now.
func (e Entry) fresh(now time.Time) bool { return now.Before(e.FreshUntil) }

// Cache is the DynamoDB table the fetcher writes and waiters read. It is
// safe for concurrent use.
type Cache struct {
	api   CacheAPI
	table string
	ttl   time.Duration // freshness
	now   func() time.Time
}

func NewCache(api CacheAPI, table string, ttl time.Duration) *Cache {
	return &Cache{api: api, table: table, ttl: ttl, now: time.Now}
}

// Get reads the entry for id with a strongly consistent read. found is
// false when there is none; freshness is the caller's question.
func (c *Cache) Get(ctx context.Context, id string) (e Entry, found bool, err error) {
	out, err := c.api.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(c.table),
		Key:            map[string]types.AttributeValue{CacheAttrID: &types.AttributeValueMemberS{Value: id}},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return Entry{}, false, fmt.Errorf("cache: get %s: %w", id, err)
	}
	if len(out.Item) == 0 {
		return Entry{}, false, nil
	}
	e, err = decodeEntry(out.Item)
	if err != nil {
		return Entry{}, false, fmt.Errorf("cache: get %s: %w", id, err)
	}
	return e, true, nil
}

// Put stores data for id as written by the lock holder with fence, fresh
// for the cache's TTL from now. The write is conditioned on the fence: it
// succeeds only if the stored entry has no fence or a fence no higher than
// this one (equal: a retry of the same holder), so a paused or late holder
// never overwrites what a newer holder stored. A refused write returns an
// error matching ErrStaleFence.
func (c *Cache) Put(ctx context.Context, id string, data json.RawMessage, fence int64) (Entry, error) {
	now := c.now()
	e := Entry{ID: id, Data: data, Fence: fence, FetchedAt: now, FreshUntil: now.Add(c.ttl)}
	fenceValue := &types.AttributeValueMemberN{Value: strconv.FormatInt(fence, 10)}
	_, err := c.api.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(c.table),
		Item: map[string]types.AttributeValue{
			CacheAttrID:           &types.AttributeValueMemberS{Value: id},
			CacheAttrData:         &types.AttributeValueMemberS{Value: string(data)},
			CacheAttrFence:        fenceValue,
			CacheAttrFetchedAtMs:  numberAttr(now.UnixMilli()),
			CacheAttrFreshUntilMs: numberAttr(e.FreshUntil.UnixMilli()),
			CacheAttrTTL:          numberAttr(e.FreshUntil.Add(cacheTTLGrace).Unix()),
		},
		ConditionExpression:       aws.String("attribute_not_exists(#fence) OR #fence <= :fence"),
		ExpressionAttributeNames:  map[string]string{"#fence": CacheAttrFence},
		ExpressionAttributeValues: map[string]types.AttributeValue{":fence": fenceValue},
	})
	var ccf *types.ConditionalCheckFailedException
	switch {
	case errors.As(err, &ccf):
		return Entry{}, fmt.Errorf("%w (id %s, fence %d)", ErrStaleFence, id, fence)
	case err != nil:
		return Entry{}, fmt.Errorf("cache: put %s: %w", id, err)
	}
	return e, nil
}

func numberAttr(n int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
}

func decodeEntry(item map[string]types.AttributeValue) (Entry, error) {
	var e Entry
	var err error
	if e.ID, err = stringAttr(item, CacheAttrID); err != nil {
		return Entry{}, err
	}
	data, err := stringAttr(item, CacheAttrData)
	if err != nil {
		return Entry{}, err
	}
	e.Data = json.RawMessage(data)
	if e.Fence, err = intAttr(item, CacheAttrFence); err != nil {
		return Entry{}, err
	}
	fetched, err := intAttr(item, CacheAttrFetchedAtMs)
	if err != nil {
		return Entry{}, err
	}
	fresh, err := intAttr(item, CacheAttrFreshUntilMs)
	if err != nil {
		return Entry{}, err
	}
	e.FetchedAt, e.FreshUntil = time.UnixMilli(fetched), time.UnixMilli(fresh)
	return e, nil
}

func stringAttr(item map[string]types.AttributeValue, name string) (string, error) {
	v, ok := item[name].(*types.AttributeValueMemberS)
	if !ok {
		return "", fmt.Errorf("attribute %s missing or not a string", name)
	}
	return v.Value, nil
}

func intAttr(item map[string]types.AttributeValue, name string) (int64, error) {
	v, ok := item[name].(*types.AttributeValueMemberN)
	if !ok {
		return 0, fmt.Errorf("attribute %s missing or not a number", name)
	}
	n, err := strconv.ParseInt(v.Value, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("attribute %s: %w", name, err)
	}
	return n, nil
}

// CreateCacheTable creates the cache table as template.yaml declares it
// (partition key id, type S, on demand), for local runs and tests, and waits
// until it is ACTIVE (some local servers, too, report a new table as
// CREATING for a moment). Not every local server has UpdateTimeToLive
// (dynalite has none), so no TTL is set.
func CreateCacheTable(ctx context.Context, client *dynamodb.Client, table string) error {
	_, err := client.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String(table),
		BillingMode:          types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String(CacheAttrID), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String(CacheAttrID), KeyType: types.KeyTypeHash}},
	})
	if err != nil {
		return fmt.Errorf("cache: create table %s: %w", table, err)
	}
	waiter := dynamodb.NewTableExistsWaiter(client, func(o *dynamodb.TableExistsWaiterOptions) {
		o.MinDelay, o.MaxDelay = 20*time.Millisecond, 500*time.Millisecond
	})
	if err := waiter.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)}, time.Minute); err != nil {
		return fmt.Errorf("cache: table %s not active: %w", table, err)
	}
	return nil
}
