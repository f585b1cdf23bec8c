// Package bench measures herdlock against the seed's lock protocol, side by
// side, on one Dynoxide server: DynamoDB requests per operation, the
// uncontended cost as a ratio to raw UpdateItem calls, herds of concurrent
// invocations on one key, an abandoned holder, the Lambda cold start under
// the Runtime Interface Emulator, and the CPU benchmarks of lockmw and emf.
//
// cmd/bench runs everything and prints one table (`make bench`); cmd/plot
// draws the herd latency against N from its raw numbers; BENCHMARKS.md at
// the repository root reports a run. The Benchmark functions in this
// package give the lockcore figures through `go test -bench`.
//
// Everything here runs on loopback and is for measurement only.
package bench
