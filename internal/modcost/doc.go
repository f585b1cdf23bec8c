// Command modcost measures what each herdlock module costs the module of a
// user who imports it: the modules in its graph (go list -m all), its
// go.sum lines, the size of a Lambda bootstrap built from it (linux,
// -tags lambda.norpc, -ldflags=-s -w) and the time its package
// initialisers take (GODEBUG=inittrace=1). Each consumer is a small
// program (the README's quick-start, or one in testdata/), built in a
// module of its own whose herdlock requirements are replaced by this
// checkout's folders.
//
//	go run ./internal/modcost            # the table in docs/modules.md
//
// The package's test checks the quick-start consumer's figures against
// the targets: at most 25 modules, and none of the test harness's or the
// tracing SDKs' modules in its go.sum.
package main
