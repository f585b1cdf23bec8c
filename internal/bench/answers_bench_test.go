package bench

import (
	"context"
	"strings"
	"sync"
	"testing"
)

var cacheTable sync.Once

// BenchmarkHerdAnswers runs herds of 50 invocations through lockmw.Wrap,
// one per iteration, with the answer inline in the lock item and through a
// cache table, and reports the DynamoDB requests per waiter and the
// waiters' release-to-return p50 and p99 over all iterations (late
// waiters, whose first request came back after the release, are counted
// apart):
//
//	go test -run '^$' -bench HerdAnswers -benchtime 5x ./internal/bench
func BenchmarkHerdAnswers(b *testing.B) {
	const n = 50
	env := benchEnv(b)
	var err error
	cacheTable.Do(func() { err = env.CreateCacheTable(context.Background()) })
	if err != nil {
		b.Fatalf("CreateCacheTable() = %v", err)
	}
	for _, mode := range []string{AnswersInline, AnswersCache} {
		b.Run(mode, func(b *testing.B) {
			// A herd that is not counted: new connections, a cold server.
			RunAnswerHerd(context.Background(), env, mode, n)
			var lat []float64
			var requests float64
			herds, late := 0, 0
			for b.Loop() {
				r := RunAnswerHerd(context.Background(), env, mode, n)
				if len(r.Errors) > 0 || r.Upstream != 1 || r.Waiters != n-1 {
					b.Fatalf("herd: %d upstream calls, %d waiters, errors: %s", r.Upstream, r.Waiters, strings.Join(r.Errors, "; "))
				}
				requests += r.WaiterRequests
				herds++
				late += r.Late
				lat = append(lat, r.latencyMs...)
			}
			s := Summarize(lat)
			b.ReportMetric(requests/float64(herds), "requests/waiter")
			b.ReportMetric(s.P50, "p50-ms")
			b.ReportMetric(s.P99, "p99-ms")
			b.ReportMetric(float64(late)/float64(herds), "late/herd")
			b.ReportMetric(0, "ns/op")
		})
	}
}
