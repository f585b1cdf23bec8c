package lockcore

import (
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/herdlock/herdlock/lockcore/storeapi"
)

func TestDecodeItem(t *testing.T) {
	base := func() map[string]types.AttributeValue {
		return map[string]types.AttributeValue{
			storeapi.AttrLockKey:    &types.AttributeValueMemberS{Value: "g/k"},
			storeapi.AttrLockGroup:  &types.AttributeValueMemberS{Value: "g"},
			storeapi.AttrLockID:     &types.AttributeValueMemberS{Value: "k"},
			storeapi.AttrRevision:   &types.AttributeValueMemberS{Value: "r1"},
			storeapi.AttrFence:      &types.AttributeValueMemberN{Value: "1764547200001"},
			storeapi.AttrBeat:       &types.AttributeValueMemberN{Value: "3"},
			storeapi.AttrIsReleased: &types.AttributeValueMemberBOOL{Value: true},
			storeapi.AttrResult:     &types.AttributeValueMemberS{Value: "success"},
			storeapi.AttrLeaseMs:    &types.AttributeValueMemberN{Value: "6000"},
			storeapi.AttrAnswer:     &types.AttributeValueMemberB{Value: []byte("1.08")},
		}
	}
	it, err := decodeItem(base())
	if err != nil {
		t.Fatalf("decodeItem() = %v", err)
	}
	if it.Key != (Key{Group: "g", ID: "k"}) || it.Revision != "r1" || it.Fence != 1764547200001 || it.Beat != 3 ||
		!it.Released || it.Result != Success || it.Lease.Milliseconds() != 6000 || string(it.Answer) != "1.08" || it.NotBeforeMs != 0 {
		t.Errorf("decodeItem() = %+v", it)
	}

	tests := []struct {
		name string
		attr string
		v    types.AttributeValue
		want string
	}{
		{"fence a string", storeapi.AttrFence, &types.AttributeValueMemberS{Value: "1"}, "fence is not a number"},
		{"fence a fraction", storeapi.AttrFence, &types.AttributeValueMemberN{Value: "1.5"}, "fence is not a 64-bit integer"},
		{"fence too large", storeapi.AttrFence, &types.AttributeValueMemberN{Value: "99999999999999999999"}, "fence is not a 64-bit integer"},
		{"revision a number", storeapi.AttrRevision, &types.AttributeValueMemberN{Value: "1"}, "revision is not a string"},
		{"released a string", storeapi.AttrIsReleased, &types.AttributeValueMemberS{Value: "true"}, "isReleased is not a boolean"},
		{"answer a string", storeapi.AttrAnswer, &types.AttributeValueMemberS{Value: "x"}, "answer is not binary"},
		{"unknown result", storeapi.AttrResult, &types.AttributeValueMemberS{Value: "maybe"}, `result "maybe"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			av := base()
			av[tt.attr] = tt.v
			if _, err := decodeItem(av); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("decodeItem() = %v, want an error with %q", err, tt.want)
			}
		})
	}
	av := base()
	delete(av, storeapi.AttrBeat)
	if _, err := decodeItem(av); err == nil || !strings.Contains(err.Error(), "missing beat") {
		t.Errorf("decodeItem() without beat = %v, want missing beat", err)
	}
}
