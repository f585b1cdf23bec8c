package storeapi

import (
	"crypto/sha256"
	"encoding/hex"
	"net/url"
)

// MaxPartitionKeyBytes is DynamoDB's limit on a partition key value.
const MaxPartitionKeyBytes = 2048

// PartitionKey returns the value stored in the lock table's partition key for
// k: the group and id, each path-escaped, joined by "/", so that no two keys
// collide. When that would exceed [MaxPartitionKeyBytes], it returns
// "sha256:" followed by the hex SHA-256 of group, a NUL byte and id; the
// item still carries the full group and id as ordinary attributes.
func PartitionKey(k Key) string {
	pk := url.PathEscape(k.Group) + "/" + url.PathEscape(k.ID)
	if len(pk) <= MaxPartitionKeyBytes {
		return pk
	}
	sum := sha256.Sum256([]byte(k.Group + "\x00" + k.ID))
	return "sha256:" + hex.EncodeToString(sum[:])
}
