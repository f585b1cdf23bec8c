// Package allold is a test proxy for the DynamoDB JSON protocol that makes a
// server which ignores ReturnValuesOnConditionCheckFailure (dynalite 4.0.0)
// answer a failed conditional write the way DynamoDB does.
//
// DynamoDB answers an UpdateItem, PutItem or DeleteItem that asked for
// ReturnValuesOnConditionCheckFailure=ALL_OLD, and whose condition failed on
// an existing item, with a ConditionalCheckFailedException whose body carries
// that item ("Item"). dynalite sends the exception without it. [Proxy]
// forwards every request unchanged and, for exactly that case, reads the item
// with a strongly consistent GetItem and adds it to the error body, with the
// X-Amz-Crc32 header and Content-Length recomputed. When the item does not
// exist, the body stays without one, as DynamoDB's does.
//
// # Exact only for sequential use
//
// The item is read after the failed write, not atomically with it. When no
// other write reaches the same item between the two (one client working on a
// key at a time, as in herdlock's differential store test), the item read is
// the one the condition failed on. Under concurrent writes to one item it may
// be a later one: do not use the proxy to judge concurrent behaviour.
package allold
