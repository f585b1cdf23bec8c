package lockcore_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/lockcore/storeapi"
)

// smallPages makes every Scan return at most two items, so List has to
// follow LastEvaluatedKey.
type smallPages struct {
	*dynamodb.Client
	calls int
}

func (s *smallPages) Scan(ctx context.Context, in *dynamodb.ScanInput, optFns ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	s.calls++
	in.Limit = aws.Int32(2)
	return s.Client.Scan(ctx, in, optFns...)
}

func TestListPaginatesAndFilters(t *testing.T) {
	ctx := t.Context()
	client := dynoxideClient(t)
	table := fmt.Sprintf("list-%d", time.Now().UnixNano())
	if err := lockcore.CreateTable(ctx, client, table); err != nil {
		t.Fatalf("CreateTable() = %v", err)
	}
	store, err := lockcore.NewDynamoStore(client, table)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UnixMilli()
	var want []string
	for i := range 5 {
		group := "a"
		if i%2 == 1 {
			group = "b"
		}
		key := lockcore.Key{Group: group, ID: fmt.Sprint("id-", i)}
		if _, err := store.Acquire(ctx, storeapi.AcquireRequest{
			Key: key, Holder: "test", Revision: fmt.Sprint("rev-", i), Lease: time.Second,
			NowMs: now, LeaseUntilMs: now + 1000, ExpiresAtMs: now + 5000, FenceBase: 1,
		}); err != nil {
			t.Fatalf("Acquire(%v) = %v", key, err)
		}
		if group == "a" {
			want = append(want, key.ID)
		}
	}
	// An item List cannot decode is reported and does not end the listing.
	if _, err := client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(table),
		Item: map[string]types.AttributeValue{
			storeapi.AttrLockKey:   &types.AttributeValueMemberS{Value: "a/broken"},
			storeapi.AttrLockGroup: &types.AttributeValueMemberS{Value: "a"},
		},
	}); err != nil {
		t.Fatal(err)
	}

	api := &smallPages{Client: client}
	var got []string
	var itemErrs []*storeapi.ItemError
	for it, err := range lockcore.List(ctx, api, table, "a") {
		var ie *storeapi.ItemError
		switch {
		case errors.As(err, &ie):
			itemErrs = append(itemErrs, ie)
		case err != nil:
			t.Fatalf("List() error = %v", err)
		default:
			got = append(got, it.Key.ID)
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("List(group a) ids = %v, want %v", got, want)
	}
	if len(itemErrs) != 1 || itemErrs[0].PartitionKey != "a/broken" {
		t.Errorf("List(group a) item errors = %v, want one for a/broken", itemErrs)
	}
	if api.calls < 3 {
		t.Errorf("Scan calls = %d, want at least 3 pages of 2 over 6 items", api.calls)
	}

	n := 0
	for _, err := range lockcore.List(ctx, client, table, "") {
		if err == nil {
			n++
		}
	}
	if n != 5 {
		t.Errorf("List(all) = %d decoded items, want 5", n)
	}
}

func TestListStopsEarly(t *testing.T) {
	ctx := t.Context()
	client := dynoxideClient(t)
	table := fmt.Sprintf("list-stop-%d", time.Now().UnixNano())
	if err := lockcore.CreateTable(ctx, client, table); err != nil {
		t.Fatal(err)
	}
	store, err := lockcore.NewDynamoStore(client, table)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UnixMilli()
	for i := range 4 {
		if _, err := store.Acquire(ctx, storeapi.AcquireRequest{
			Key: lockcore.Key{Group: "g", ID: fmt.Sprint(i)}, Holder: "test", Revision: fmt.Sprint("r", i),
			Lease: time.Second, NowMs: now, LeaseUntilMs: now + 1000, ExpiresAtMs: now + 5000, FenceBase: 1,
		}); err != nil {
			t.Fatal(err)
		}
	}
	api := &smallPages{Client: client}
	for range lockcore.List(ctx, api, table, "") {
		break
	}
	if api.calls != 1 {
		t.Errorf("Scan calls after stopping at the first item = %d, want 1", api.calls)
	}
}

func TestListScanError(t *testing.T) {
	client := dynoxideClient(t)
	var errs []error
	for _, err := range lockcore.List(t.Context(), client, "no-such-table", "") {
		errs = append(errs, err)
	}
	var nf *types.ResourceNotFoundException
	if len(errs) != 1 || !errors.As(errs[0], &nf) {
		t.Errorf("List(missing table) errors = %v, want one ResourceNotFoundException", errs)
	}
}
