package lockcore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/herdlock/herdlock/lockcore/storeapi"
)

// TableAPI is the part of the DynamoDB API that [CreateTable] calls.
// *dynamodb.Client satisfies it.
type TableAPI interface {
	CreateTable(ctx context.Context, in *dynamodb.CreateTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error)
	DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
}

var _ TableAPI = (*dynamodb.Client)(nil)

// tableWait bounds how long CreateTable waits for the table to become
// active when ctx has no earlier deadline.
const tableWait = 2 * time.Minute

// CreateTable creates a lock table for [DynamoStore] named table: partition
// key [storeapi.AttrLockKey] of type S, no sort key, on-demand (PAY_PER_REQUEST)
// billing. A table that already exists is fine (its schema is not checked).
// It then polls DescribeTable until the table is ACTIVE, for at most two
// minutes or until ctx ends. An empty TableStatus counts as active, because
// some local servers (minidyn) never report one; the SDK's table waiter
// would wait on them forever, so it is not used.
//
// The table's TTL setting is left alone: turn it on for [storeapi.AttrTTL] only for
// clean-up (see [storeapi.AcquireRequest].FenceBase).
func CreateTable(ctx context.Context, api TableAPI, table string) error {
	if api == nil {
		return errors.New("lockcore: create table: nil client")
	}
	if table == "" {
		return errors.New("lockcore: create table: blank table name")
	}
	_, err := api.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:   aws.String(table),
		BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String(storeapi.AttrLockKey), AttributeType: types.ScalarAttributeTypeS},
		},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String(storeapi.AttrLockKey), KeyType: types.KeyTypeHash},
		},
	})
	var inUse *types.ResourceInUseException
	if err != nil && !errors.As(err, &inUse) {
		return fmt.Errorf("lockcore: create table %s: %w", table, err)
	}

	ctx, cancel := context.WithTimeout(ctx, tableWait)
	defer cancel()
	delay := 20 * time.Millisecond
	for {
		out, err := api.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
		var notFound *types.ResourceNotFoundException
		switch {
		case errors.As(err, &notFound):
			// Eventually consistent control plane: keep polling.
		case err != nil:
			return fmt.Errorf("lockcore: create table %s: describe: %w", table, err)
		case out.Table == nil:
			return fmt.Errorf("lockcore: create table %s: describe returned no table", table)
		case out.Table.TableStatus == types.TableStatusActive || out.Table.TableStatus == "":
			return nil
		case out.Table.TableStatus != types.TableStatusCreating && out.Table.TableStatus != types.TableStatusUpdating:
			return fmt.Errorf("lockcore: create table %s: status %s", table, out.Table.TableStatus)
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("lockcore: create table %s: waiting until active: %w", table, context.Cause(ctx))
		case <-t.C:
		}
		delay = min(2*delay, time.Second)
	}
}
