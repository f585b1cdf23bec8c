package lockcore

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/herdlock/herdlock/lockcore/storeapi"
)

// tableDescriber is the part of the DynamoDB API that CheckTable calls.
// *dynamodb.Client satisfies it.
type tableDescriber interface {
	DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
	DescribeTimeToLive(ctx context.Context, in *dynamodb.DescribeTimeToLiveInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTimeToLiveOutput, error)
}

var _ tableDescriber = (*dynamodb.Client)(nil)

// CheckTable checks, with one DescribeTable and one DescribeTimeToLive,
// that the store's table is one the lock can use: it exists and is not
// being deleted, its key schema is the partition key [storeapi.AttrLockKey] of type
// S and nothing else, and its TTL setting deletes items by [storeapi.AttrTTL]. Run
// it at initialisation (lockmw's WithTableCheck does), so that a
// misconfigured function says what is wrong at once instead of failing
// every invocation with a refused request (see [ErrStoreRefused]). It
// returns nil, or an error matching [ErrConfig] that names every problem
// found, or the store's error when the table could not be described (a
// refusal names only the error code). The client given to [NewDynamoStore]
// must also have the two Describe methods (*dynamodb.Client has them), and
// the role needs dynamodb:DescribeTable and dynamodb:DescribeTimeToLive.
// It is safe for concurrent use.
func (s *DynamoStore) CheckTable(ctx context.Context) error {
	api, ok := s.api.(tableDescriber)
	if !ok {
		return &configError{fmt.Errorf("lockcore: check table %s: the client cannot describe tables (DescribeTable, DescribeTimeToLive)", s.table)}
	}
	out, err := api.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(s.table)})
	var notFound *types.ResourceNotFoundException
	switch {
	case errors.As(err, &notFound):
		return &configError{fmt.Errorf("lockcore: check table %s: the table does not exist", s.table)}
	case err != nil:
		return fmt.Errorf("lockcore: check table %s: %w", s.table, storeError("describe table", err))
	case out.Table == nil:
		return fmt.Errorf("lockcore: check table %s: DescribeTable returned no table", s.table)
	}
	problems := tableProblems(out.Table)
	ttl, err := api.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(s.table)})
	if err != nil {
		return fmt.Errorf("lockcore: check table %s: %w", s.table, storeError("describe time to live", err))
	}
	if p := ttlProblem(ttl.TimeToLiveDescription); p != "" {
		problems = append(problems, p)
	}
	if len(problems) > 0 {
		return &configError{fmt.Errorf("lockcore: check table %s: %s", s.table, strings.Join(problems, "; "))}
	}
	return nil
}

// tableProblems returns what makes t unfit for a lock table.
func tableProblems(t *types.TableDescription) []string {
	var problems []string
	if t.TableStatus == types.TableStatusDeleting || t.TableStatus == types.TableStatusArchived ||
		t.TableStatus == types.TableStatusInaccessibleEncryptionCredentials {
		problems = append(problems, fmt.Sprintf("status %s", t.TableStatus))
	}
	hash, others := "", 0
	for _, k := range t.KeySchema {
		if k.KeyType == types.KeyTypeHash && hash == "" {
			hash = aws.ToString(k.AttributeName)
		} else {
			others++
		}
	}
	if hash != storeapi.AttrLockKey || others > 0 {
		problems = append(problems, fmt.Sprintf("key schema must be the partition key %q alone, has %s", storeapi.AttrLockKey, describeKeys(t.KeySchema)))
	}
	for _, d := range t.AttributeDefinitions {
		if aws.ToString(d.AttributeName) == storeapi.AttrLockKey && d.AttributeType != types.ScalarAttributeTypeS {
			problems = append(problems, fmt.Sprintf("%q must be of type S, is %s", storeapi.AttrLockKey, d.AttributeType))
		}
	}
	return problems
}

func describeKeys(ks []types.KeySchemaElement) string {
	if len(ks) == 0 {
		return "none"
	}
	parts := make([]string, len(ks))
	for i, k := range ks {
		parts[i] = fmt.Sprintf("%q (%s)", aws.ToString(k.AttributeName), k.KeyType)
	}
	return strings.Join(parts, ", ")
}

// ttlProblem returns what is wrong with the table's TTL setting, or "".
func ttlProblem(d *types.TimeToLiveDescription) string {
	if d == nil {
		return fmt.Sprintf("time to live is not enabled on %q", storeapi.AttrTTL)
	}
	on := d.TimeToLiveStatus == types.TimeToLiveStatusEnabled || d.TimeToLiveStatus == types.TimeToLiveStatusEnabling
	switch {
	case !on:
		return fmt.Sprintf("time to live is not enabled on %q (status %s)", storeapi.AttrTTL, d.TimeToLiveStatus)
	case aws.ToString(d.AttributeName) != storeapi.AttrTTL:
		return fmt.Sprintf("time to live is on %q, not %q", aws.ToString(d.AttributeName), storeapi.AttrTTL)
	}
	return ""
}
