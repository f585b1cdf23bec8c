package bench

import (
	"context"
	"testing"
)

// BenchmarkProcessHerd16 and BenchmarkProcessHerd64 run figure 7: K
// same-key invocations at once in this process through one wrapped
// handler, one herd per iteration, reporting the lock's DynamoDB requests
// per herd and the holder's release to the last follower's return.
//
//	go test -run '^$' -bench ProcessHerd -benchtime 10x ./internal/bench
func BenchmarkProcessHerd16(b *testing.B) { benchProcessHerd(b, 16) }

func BenchmarkProcessHerd64(b *testing.B) { benchProcessHerd(b, 64) }

func benchProcessHerd(b *testing.B, k int) {
	env := benchEnv(b)
	var all []float64
	var reqs float64
	for b.Loop() {
		r := RunProcessHerd(context.Background(), env, k, 1)
		if len(r.Errors) > 0 {
			b.Fatal(r.Errors)
		}
		for _, v := range r.LockRequests {
			reqs += v
		}
		all = append(all, r.ReleaseToLastMs...)
	}
	b.ReportMetric(reqs/float64(len(all)), "lock-requests/herd")
	b.ReportMetric(Summarize(all).P50, "release-to-last-ms-p50")
}
