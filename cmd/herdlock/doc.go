// Command herdlock inspects and repairs herdlock lock tables: it creates a
// table, shows one lock item decoded with a verdict, lists the items,
// force-releases a lock at the revision you saw, and watches an item change.
//
// Usage:
//
//	herdlock create-table [--table T] [--print-cfn] [--ttl=false] [--output text|json] [TABLE]
//	herdlock get     [--table T] [--output text|json] GROUP ID
//	herdlock list    [--table T] [--group G] [--held | --abandoned] [--output text|json]
//	herdlock release [--table T] --revision R [--yes] [--output text|json] GROUP ID
//	herdlock watch   [--table T] [--interval 1s] [--output text|json] GROUP ID
//	herdlock --version
//
// Flags may come before or after the arguments. Every command takes
// --table; the table defaults to the HERDLOCK_TABLE environment variable
// (create-table also takes it as its argument). Region, credentials and
// profile come from the usual AWS configuration (AWS_REGION, AWS_PROFILE,
// the shared config and credentials files, AWS_ENDPOINT_URL_DYNAMODB);
// --region, --profile and --endpoint-url override them.
//
// Every command takes --output text (the default) or --output json: one
// JSON document on stdout (for watch, one JSON object a line, per change);
// errors still go to stderr, with the exit code below. Text and JSON name
// the same fields alike (holder, renewals, revision, fence, ...).
//
// A revision is 32 lower-case hex digits, as get shows it. release refuses
// a revision the item does not carry and says whether it was the previous
// holder's (the lock was taken over since) or one the item never carried
// (mistyped, or older than the last take-over).
//
// A malformed revision or duration is a usage error (exit 2) before any
// call to DynamoDB; durations take a unit (200ms, 1s).
//
// --version, anywhere on the command line, prints the module version stamped into the binary by the Go
// toolchain (a tag for go install ...@version, else "devel"), with the VCS
// revision when the build recorded one.
//
// Exit codes, for scripts:
//
//	0  success (for watch: stopped by Ctrl-C)
//	1  an error talking to DynamoDB, or an item that does not decode
//	2  usage: unknown command, bad flag, missing argument, bad table name
//	3  not found: get or release on an absent lock item (watch keeps watching)
//	4  refused: release at a revision the item does not carry (stale or
//	   mistyped), or on an item released with success
//	5  not confirmed: release answered with anything but "y"
//	6  table not found: no such table in this Region and endpoint
//
// The verdict of an item is judged with this machine's clock: "held" while
// its lease and hard maximum lie ahead, "abandoned" once either lapsed
// without a release, "released with success", "released with failure", or
// "absent".
package main
