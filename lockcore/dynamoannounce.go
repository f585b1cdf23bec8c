package lockcore

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/herdlock/herdlock/lockcore/storeapi"
)

// putAPI is the DynamoDB operation announcements need beyond [DynamoAPI].
// *dynamodb.Client has it; a DynamoStore over a client without it keeps
// no announcements (and the lock does not ask it to).
type putAPI interface {
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
}

var errNoPutItem = errors.New("the DynamoDB client has no PutItem")

// announces reports whether the store can keep announcements.
func (s *DynamoStore) announces() bool {
	_, ok := s.api.(putAPI)
	return ok
}

// announceCond lets an announcement replace only an older one.
const announceCond = "attribute_not_exists(#lockKey) OR #announcedFence < :fence"

// Announce implements [storeapi.Announcer]: one conditional PutItem on the shard's
// item. Retrying it is safe: an applied attempt makes the next one fail its
// condition, which Announce reports as not applied.
func (s *DynamoStore) Announce(ctx context.Context, a storeapi.Announcement) (bool, error) {
	if err := checkAnnouncement(a); err != nil {
		return false, fmt.Errorf("lockcore: dynamodb announce: %w", err)
	}
	api, ok := s.api.(putAPI)
	if !ok {
		return false, fmt.Errorf("lockcore: dynamodb announce: %w", errNoPutItem)
	}
	item := map[string]types.AttributeValue{
		storeapi.AttrLockKey:        str(storeapi.AnnouncementKey(a.Key, a.Shard)),
		storeapi.AttrAnnouncedFence: num(a.Fence),
		storeapi.AttrResultRef:      str(a.ResultRef),
		storeapi.AttrReleasedAtMs:   num(a.ReleasedAtMs),
		storeapi.AttrAnswerOmitted:  boolean(a.AnswerOmitted),
	}
	if len(a.Answer) > 0 {
		item[storeapi.AttrAnswer] = &types.AttributeValueMemberB{Value: a.Answer}
	}
	if a.TTL > 0 {
		item[storeapi.AttrTTL] = num(a.TTL)
	}
	_, err := api.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                 aws.String(s.table),
		Item:                      item,
		ConditionExpression:       aws.String(announceCond),
		ExpressionAttributeNames:  map[string]string{"#lockKey": storeapi.AttrLockKey, "#announcedFence": storeapi.AttrAnnouncedFence},
		ExpressionAttributeValues: map[string]types.AttributeValue{":fence": num(a.Fence)},
	}, s.retry.optFns("get")...)
	var ccf *types.ConditionalCheckFailedException
	switch {
	case errors.As(err, &ccf):
		return false, nil
	case err != nil:
		return false, storeError("announce", err)
	}
	return true, nil
}

// GetAnnouncement implements [storeapi.Announcer].
func (s *DynamoStore) GetAnnouncement(ctx context.Context, key Key, shard int) (storeapi.Announcement, bool, error) {
	if err := checkShard(key, shard); err != nil {
		return storeapi.Announcement{}, false, fmt.Errorf("lockcore: dynamodb get announcement: %w", err)
	}
	out, err := s.api.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(s.table),
		Key:            map[string]types.AttributeValue{storeapi.AttrLockKey: str(storeapi.AnnouncementKey(key, shard))},
		ConsistentRead: aws.Bool(true),
	}, s.retry.optFns("get")...)
	if err != nil {
		return storeapi.Announcement{}, false, storeError("get announcement", err)
	}
	if len(out.Item) == 0 {
		return storeapi.Announcement{}, false, nil
	}
	d := attrDecoder{av: out.Item}
	a := storeapi.Announcement{
		Key: key, Shard: shard,
		Fence:         d.num(storeapi.AttrAnnouncedFence),
		ResultRef:     d.str(storeapi.AttrResultRef),
		ReleasedAtMs:  d.num(storeapi.AttrReleasedAtMs),
		Answer:        d.bytes(storeapi.AttrAnswer),
		AnswerOmitted: d.boolean(storeapi.AttrAnswerOmitted),
		TTL:           d.num(storeapi.AttrTTL),
	}
	if d.err == nil && a.Fence <= 0 {
		d.err = fmt.Errorf("announcement fence %d", a.Fence)
	}
	if d.err != nil {
		return storeapi.Announcement{}, false, fmt.Errorf("lockcore: dynamodb get announcement: malformed item: %w", d.err)
	}
	return a, true, nil
}

// isAnnouncement reports whether a stored item is an announcement.
func isAnnouncement(av map[string]types.AttributeValue) bool {
	_, ok := av[storeapi.AttrAnnouncedFence]
	return ok
}
