// Package capacity is a model of DynamoDB's per-item capacity for tests and
// benchmarks: an HTTP proxy that speaks the DynamoDB JSON protocol, sits in
// front of a local DynamoDB-API server (Dynoxide, dynalite, or minidyn in
// process), and throttles requests the way DynamoDB throttles a hot
// partition.
//
// One item lives in one partition, and a partition serves at most 1000
// write capacity units (WCU) and 3000 read capacity units (RCU) per second,
// whatever the table's capacity mode. The proxy keeps a write and a read
// token bucket per item, refilled at those rates and holding at most one
// second of them (all settable in [Config]), and charges each request as
// DynamoDB does:
//
//   - a write (PutItem, UpdateItem, DeleteItem) costs 1 WCU per started KB of
//     the larger of the item before and after it; a write whose condition
//     failed costs the same on the item as it stands, at least 1 WCU;
//   - a GetItem costs 1 RCU per started 4 KB of the item, at least 1 RCU,
//     and half of that when it is eventually consistent.
//
// A request whose bucket cannot pay its estimated cost (from the item's
// last known size) is answered by the proxy itself, without reaching the
// server, with the error DynamoDB returns for a hot key: HTTP 400, a
// ProvisionedThroughputExceededException (or ThrottlingException, see
// [Config.Exception]) whose ThrottlingReasons name
// TableWriteKeyRangeThroughputExceeded or TableReadKeyRangeThroughputExceeded
// and the table's ARN, with a correct x-amz-crc32 header. A request that is
// let through pays its estimate at once and the difference to its real cost
// when the answer shows the item's size, so a bucket can go into debt, as
// DynamoDB's do.
//
// The proxy counts requests, throttles and consumed capacity per item and
// operation ([Proxy.Stats]). Operations other than the three writes and
// GetItem (CreateTable, DescribeTable, Query, batches, transactions) pass
// through uncharged and uncounted per item.
//
// Item sizes follow DynamoDB's rules (attribute name lengths plus value
// sizes; numbers by significant digits), learnt from the items in requests
// and answers; when an answer carries no item (an UpdateItem without
// ReturnValues ALL_NEW, a failed condition on a server without
// ReturnValuesOnConditionCheckFailure) the proxy reads the item from the
// server, uncharged. Under concurrent writes to one item a charge may use a
// size one write old; for the small lock items of herdlock every charge is
// 1 unit either way.
//
// The model is for loopback tests only: it does not check signatures, and
// it does not model table-level limits, adaptive capacity or partition
// splits.
package capacity
