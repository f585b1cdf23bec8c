// Command herdlock inspects and repairs herdlock lock tables: it creates a
// table, shows one lock item decoded with a verdict, lists the items,
// force-releases a lock at the revision you saw, and watches an item change.
//
// Usage:
//
//	herdlock create-table [--print-cfn] [--ttl=false] TABLE
//	herdlock get     [--table T] [--json] GROUP ID
//	herdlock list    [--table T] [--group G] [--held | --abandoned] [--json]
//	herdlock release [--table T] --revision R [--yes] GROUP ID
//	herdlock watch   [--table T] [--interval 1s] GROUP ID
//
// Flags may come before or after the arguments. The table defaults to the
// HERDLOCK_TABLE environment variable. Region, credentials and profile come
// from the usual AWS configuration (AWS_REGION, AWS_PROFILE, the shared
// config and credentials files, AWS_ENDPOINT_URL_DYNAMODB); --region,
// --profile and --endpoint-url override them.
//
// Exit codes, for scripts:
//
//	0  success (for watch: stopped by Ctrl-C)
//	1  an error talking to DynamoDB, or an item that does not decode
//	2  usage: unknown command, bad flag, missing argument
//	3  not found: get or release on an absent item (watch keeps watching)
//	4  refused: release at a revision the item no longer carries, or on an
//	   item released with success
//	5  not confirmed: release answered with anything but "y"
//
// The verdict of an item is judged with this machine's clock: "held" while
// its lease and hard maximum lie ahead, "abandoned" once either lapsed
// without a release, "released with success", "released with failure", or
// "absent".
package main
