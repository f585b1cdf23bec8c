package storetest

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/herdlock/herdlock/lockcore"
)

// ConditionCounter wraps a [lockcore.DynamoAPI] and counts the failed
// conditions of UpdateItem that came with the item (ALL_OLD, as DynamoDB
// answers) and those that came without one (as dynalite answers), so a
// test can show which path of [lockcore.DynamoStore] a server exercised.
// It is safe for concurrent use.
type ConditionCounter struct {
	lockcore.DynamoAPI
	WithItem, WithoutItem atomic.Int64
}

// UpdateItem calls the wrapped API and counts a failed condition.
func (c *ConditionCounter) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	out, err := c.DynamoAPI.UpdateItem(ctx, in, optFns...)
	if ccf := (*types.ConditionalCheckFailedException)(nil); errors.As(err, &ccf) {
		if len(ccf.Item) > 0 {
			c.WithItem.Add(1)
		} else {
			c.WithoutItem.Add(1)
		}
	}
	return out, err
}

// PutItem calls the wrapped API's PutItem (which release announcements
// use, see [storeapi.Announcer]), or fails when it has none.
func (c *ConditionCounter) PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	p, ok := c.DynamoAPI.(interface {
		PutItem(context.Context, *dynamodb.PutItemInput, ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	})
	if !ok {
		return nil, errors.New("storetest: the wrapped DynamoDB API has no PutItem")
	}
	return p.PutItem(ctx, in, optFns...)
}
