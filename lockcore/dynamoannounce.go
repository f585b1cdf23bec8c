package lockcore

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Attributes of an announcement item (see [Announcer]), besides
// [AttrLockKey] (its [AnnouncementKey]), [AttrResultRef],
// [AttrReleasedAtMs], [AttrAnswer] and [AttrTTL]. An announcement item has
// no [AttrLockGroup], so a listing by group never meets one, and [List]
// leaves them out.
const (
	AttrAnnouncedFence = "announcedFence"
	AttrAnswerOmitted  = "answerOmitted"
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

// Announce implements [Announcer]: one conditional PutItem on the shard's
// item. Retrying it is safe: an applied attempt makes the next one fail its
// condition, which Announce reports as not applied.
func (s *DynamoStore) Announce(ctx context.Context, a Announcement) (bool, error) {
	if err := checkAnnouncement(a); err != nil {
		return false, fmt.Errorf("lockcore: dynamodb announce: %w", err)
	}
	api, ok := s.api.(putAPI)
	if !ok {
		return false, fmt.Errorf("lockcore: dynamodb announce: %w", errNoPutItem)
	}
	item := map[string]types.AttributeValue{
		AttrLockKey:        str(AnnouncementKey(a.Key, a.Shard)),
		AttrAnnouncedFence: num(a.Fence),
		AttrResultRef:      str(a.ResultRef),
		AttrReleasedAtMs:   num(a.ReleasedAtMs),
		AttrAnswerOmitted:  boolean(a.AnswerOmitted),
	}
	if len(a.Answer) > 0 {
		item[AttrAnswer] = &types.AttributeValueMemberB{Value: a.Answer}
	}
	if a.TTL > 0 {
		item[AttrTTL] = num(a.TTL)
	}
	_, err := api.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                 aws.String(s.table),
		Item:                      item,
		ConditionExpression:       aws.String(announceCond),
		ExpressionAttributeNames:  map[string]string{"#lockKey": AttrLockKey, "#announcedFence": AttrAnnouncedFence},
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

// GetAnnouncement implements [Announcer].
func (s *DynamoStore) GetAnnouncement(ctx context.Context, key Key, shard int) (Announcement, bool, error) {
	if err := checkShard(key, shard); err != nil {
		return Announcement{}, false, fmt.Errorf("lockcore: dynamodb get announcement: %w", err)
	}
	out, err := s.api.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(s.table),
		Key:            map[string]types.AttributeValue{AttrLockKey: str(AnnouncementKey(key, shard))},
		ConsistentRead: aws.Bool(true),
	}, s.retry.optFns("get")...)
	if err != nil {
		return Announcement{}, false, storeError("get announcement", err)
	}
	if len(out.Item) == 0 {
		return Announcement{}, false, nil
	}
	d := attrDecoder{av: out.Item}
	a := Announcement{
		Key: key, Shard: shard,
		Fence:         d.num(AttrAnnouncedFence),
		ResultRef:     d.str(AttrResultRef),
		ReleasedAtMs:  d.num(AttrReleasedAtMs),
		Answer:        d.bytes(AttrAnswer),
		AnswerOmitted: d.boolean(AttrAnswerOmitted),
		TTL:           d.num(AttrTTL),
	}
	if d.err == nil && a.Fence <= 0 {
		d.err = fmt.Errorf("announcement fence %d", a.Fence)
	}
	if d.err != nil {
		return Announcement{}, false, fmt.Errorf("lockcore: dynamodb get announcement: malformed item: %w", d.err)
	}
	return a, true, nil
}

// isAnnouncement reports whether a stored item is an announcement.
func isAnnouncement(av map[string]types.AttributeValue) bool {
	_, ok := av[AttrAnnouncedFence]
	return ok
}
