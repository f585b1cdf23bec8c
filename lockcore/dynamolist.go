package lockcore

import (
	"context"
	"errors"
	"fmt"
	"iter"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/herdlock/herdlock/lockcore/storeapi"
)

// ScanAPI is the part of the DynamoDB API that [List] calls.
// *dynamodb.Client satisfies it.
type ScanAPI interface {
	Scan(ctx context.Context, in *dynamodb.ScanInput, optFns ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error)
}

var _ ScanAPI = (*dynamodb.Client)(nil)

// List reads every lock item of table (announcement items are left out,
// see [storeapi.Announcer]) with a paginated Scan, for operators
// and tools: locks are never judged from a listing, so the reads are
// eventually consistent, unlike [DynamoStore.Get]. A non-empty group keeps
// only the items of that lock group (a filter on the server, so every page
// is still read and billed). Each item is yielded with a nil error; an item
// that cannot be decoded is yielded as a zero Item with an *[storeapi.ItemError] and
// the listing continues; a failed Scan is yielded as an error and ends it.
// Stopping the range loop stops the scan.
func List(ctx context.Context, api ScanAPI, table, group string) iter.Seq2[storeapi.Item, error] {
	return func(yield func(storeapi.Item, error) bool) {
		if api == nil || table == "" {
			yield(storeapi.Item{}, errors.New("lockcore: list: nil client or blank table name"))
			return
		}
		in := &dynamodb.ScanInput{TableName: aws.String(table)}
		if group != "" {
			in.FilterExpression = aws.String("#group = :group")
			in.ExpressionAttributeNames = map[string]string{"#group": storeapi.AttrLockGroup}
			in.ExpressionAttributeValues = map[string]types.AttributeValue{":group": str(group)}
		}
		for {
			out, err := api.Scan(ctx, in)
			if err != nil {
				yield(storeapi.Item{}, fmt.Errorf("lockcore: list %s: %w", table, err))
				return
			}
			for _, av := range out.Items {
				if isAnnouncement(av) {
					continue
				}
				it, err := decodeItem(av)
				if err != nil {
					err = &storeapi.ItemError{PartitionKey: partitionKeyOf(av), Err: err}
				}
				if !yield(it, err) {
					return
				}
			}
			if len(out.LastEvaluatedKey) == 0 {
				return
			}
			in.ExclusiveStartKey = out.LastEvaluatedKey
		}
	}
}

func partitionKeyOf(av map[string]types.AttributeValue) string {
	if s, ok := av[storeapi.AttrLockKey].(*types.AttributeValueMemberS); ok {
		return s.Value
	}
	return ""
}
