// Package chaos is herdlock's fault harness: it runs lock workers as
// separate OS processes against Dynoxide through a seeded fault proxy,
// freezes and kills them, skews their wall clocks, and then checks the
// recorded history for stale fences, two holders, slow take-overs,
// thundering herds, non-linearizable store behaviour, upstream calls
// beyond the failure policy and overwritten operator releases
// (docs/protocol.md, "How this is checked").
//
// Every event of every process is stamped with the host's CLOCK_MONOTONIC
// (see [Mono]), which all processes share; the checkers never read a
// worker's wall clock. Every random decision comes from a PRNG seeded from
// [Config].Seed and is written to the run's JSONL log.
//
// The pieces:
//   - server.go: the DynamoDB-API server the harness runs on, and its
//     clients (the one place that chooses them);
//   - proxy.go: one fault proxy per worker slot and one for the operator
//     (loopback listeners), with brownouts in storm phases;
//   - throttle.go: the capacity model (package internal/capacity) between
//     the fault proxies and Dynoxide, which throttles each item at its
//     capacity in throttle and storm phases ([Throttled], [Storm]);
//   - storm.go and operator.go: the storm's brownouts, failing upstream
//     and operator force-releases, and its two stretches: a brownout of
//     every answer between 1× and 3× the attempt timeout, and a
//     misconfiguration that answers every worker's write with
//     AccessDeniedException; storm_coverage.go counts each storm fault
//     kind that happened ([Report].StormFaults);
//   - worker.go and worker_storm.go: the worker process ([WorkerMain]),
//     which the parent starts by re-executing a binary with [WorkerEnv]
//     set; its wait and release events carry the counters its Locks
//     recorded, summed in [Report].LockMetrics (late copies, leases
//     lost, take-overs, announcement reads); worker_valid.go samples each
//     hold's Valid() and records its interval and its context's cause;
//   - resource.go: the fenced resource, the counted upstream and the freeze
//     requests, served by the parent;
//   - run.go: the parent ([Run]): phases, process faults, collection;
//   - check.go, linear.go, check_episode.go, check_operator.go and
//     check_published.go: the safety checks (1 to 8), on the store's
//     history; check_contract.go: the contract checks (9 to 14,
//     [ContractChecks]), on what each caller was told and when;
//     worker_idem.go and check_idem.go: the storm's idempotent operations,
//     delivered at once and again, some with another payload under the
//     same key, and check 15 on what each delivery got;
//     report.go: the summary table.
//
// The package is test-only infrastructure; nothing in herdlock's public
// packages imports it.
package chaos
