package bench

import (
	"context"
	"errors"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/herdlock/herdlock/lockcore/storeapi"
)

// blindAPI hides the key's hold history (storeapi.AttrHoldMeanMs) from every
// item its client returns, so that a lock over it never predicts a holder's
// end and waits at lockcore's fixed pace: the comparison of predictive
// waiting. Holders over it restart the history at every release, which no
// waiter over it sees.
type blindAPI struct{ StoreAPI }

// Blind returns api with the hold history hidden from every item it
// returns (see the fixed-pace modes).
func Blind(api StoreAPI) StoreAPI { return blindAPI{api} }

func hideHistory(item map[string]types.AttributeValue) {
	delete(item, storeapi.AttrHoldMeanMs)
}

func hideHistoryErr(err error) {
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		hideHistory(ccf.Item)
	}
}

func (b blindAPI) GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	out, err := b.StoreAPI.GetItem(ctx, in, optFns...)
	if out != nil {
		hideHistory(out.Item)
	}
	return out, err
}

func (b blindAPI) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	out, err := b.StoreAPI.UpdateItem(ctx, in, optFns...)
	if out != nil {
		hideHistory(out.Attributes)
	}
	hideHistoryErr(err)
	return out, err
}
