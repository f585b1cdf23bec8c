package storeapi

import (
	"context"
	"strconv"
	"time"
)

// Announcer is a [Store] that can keep release announcements.
// lockcore.DynamoStore and lockcore.MemoryStore implement it; the lock uses it when the
// store implements it and lockcore.Herd.Announcements allows it.
type Announcer interface {
	// Announce writes a at its shard of a.Key, on condition that the shard
	// holds no announcement or one of a lower Fence. applied is false when
	// the condition failed (the shard already announces this fence or a
	// later one): that is not an error.
	Announce(ctx context.Context, a Announcement) (applied bool, err error)
	// GetAnnouncement reads shard of key with a strongly consistent read.
	GetAnnouncement(ctx context.Context, key Key, shard int) (a Announcement, found bool, err error)
}

// Announcement is a copy of the success a lock's holder published.
type Announcement struct {
	Key   Key
	Shard int   // 0 to MaxAnnounceShards-1
	Fence int64 // the fence of the holder that published the success (Item.ResultFence)
	// ResultRef and ReleasedAtMs are the success's reference and release
	// time, as the lock item has them.
	ResultRef    string
	ReleasedAtMs int64
	// Answer is the inline answer, when the release published one of at
	// most [MaxAnnouncedAnswerBytes]; a larger one is left out and
	// AnswerOmitted is set: a waiter then reads the lock item for it.
	Answer        []byte
	AnswerOmitted bool
	TTL           int64 // Unix epoch seconds
}

const (
	// MaxAnnounceShards is the most lockcore.Herd.Announcements accepts.
	MaxAnnounceShards = 64
	// MaxAnnouncedAnswerBytes is the largest inline answer an announcement
	// copies (one read unit): a larger answer is read from the lock item.
	MaxAnnouncedAnswerBytes = 4096
	// AnnouncementTTL is how long after the release an announcement may be
	// deleted by the table's TTL.
	AnnouncementTTL = time.Hour
)

// AnnouncementKey returns the partition key value of shard of k: the lock
// item's [PartitionKey] followed by "#announce-" and the shard number. A
// lock item's partition key never contains "#" (it is path-escaped or a
// hex hash), so no lock key names an announcement.
func AnnouncementKey(k Key, shard int) string {
	return PartitionKey(k) + "#announce-" + strconv.Itoa(shard)
}
