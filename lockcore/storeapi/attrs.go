package storeapi

// Attribute names of a lock item in the DynamoDB table. AttrLockKey is the
// table's partition key (type S), holding [PartitionKey] of the lock's
// [Key]; the others are ordinary attributes, named after the [Item] fields
// they hold (AttrAnswer is type B; AttrHolderName, of Item.Holder, keeps
// the attribute's first name, ownerName). AttrTTL (Unix epoch seconds) is written
// only when the holder asked for one and is meant for the table's TTL
// setting, for clean-up only: DynamoDB may delete expired items days late,
// so it is never used as expiry.
const (
	AttrLockKey           = "lockKey"
	AttrLockGroup         = "lockGroup"
	AttrLockID            = "lockId"
	AttrHolderName        = "ownerName"
	AttrRevision          = "revision"
	AttrFence             = "fence"
	AttrBeat              = "beat"
	AttrLeaseMs           = "leaseMs"
	AttrHeartbeatAtMs     = "heartbeatAtMs"
	AttrLeaseUntilMs      = "leaseUntilMs"
	AttrExpiresAtMs       = "expiresAtMs"
	AttrIsReleased        = "isReleased"
	AttrResult            = "result"
	AttrResultRef         = "resultRef"
	AttrResultFence       = "resultFence"
	AttrReleasedAtMs      = "releasedAtMs"
	AttrRecordAccount     = "recordAccount"
	AttrTTL               = "ttl"
	AttrPrevRevision      = "prevRevision"
	AttrPrevResult        = "prevResult"
	AttrPrevFailReason    = "prevFailReason"
	AttrPublishedRevision = "publishedRevision"
	AttrPublishedResult   = "publishedResult"
	AttrFailures          = "failures"
	AttrNotBeforeMs       = "notBeforeMs"
	AttrFailReason        = "failReason"
	AttrFailRecentUntilMs = "failRecentUntilMs"
	AttrAnswer            = "answer"
	AttrAcquiredAtMs      = "acquiredAtMs"
	AttrHoldMeanMs        = "holdMeanMs"
	AttrHoldDevMs         = "holdDevMs"
)

// Attributes of an announcement item (see [Announcer]), besides
// [AttrLockKey] (its [AnnouncementKey]), [AttrResultRef],
// [AttrReleasedAtMs], [AttrAnswer] and [AttrTTL]. An announcement item has
// no [AttrLockGroup], so a listing by group never meets one, and lockcore.List
// leaves them out.
const (
	AttrAnnouncedFence = "announcedFence"
	AttrAnswerOmitted  = "answerOmitted"
)
