package emf

import (
	"encoding/json"
	"io"
	"strconv"
	"testing"
)

// benchNames are the 20 metrics of the benchmark document.
var benchNames = func() []string {
	names := make([]string, 20)
	for i := range names {
		names[i] = "BenchmarkMetric" + strconv.Itoa(i)
	}
	return names
}()

func newBench(b *testing.B) *Metrics {
	m, err := New(WithNamespace("Bench"), WithService("svc"), WithWriter(io.Discard), withClock(fixedClock),
		WithDefaultDimensions(map[string]string{"env": "prod"}), withDisabled(false))
	if err != nil {
		b.Fatal(err)
	}
	return m
}

// BenchmarkAdd measures one Add in steady state. Every 1000 Adds the
// values are flushed, outside the timer, as an invocation would.
func BenchmarkAdd(b *testing.B) {
	m := newBench(b)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if err := m.Add(benchNames[i%20], Milliseconds, float64(i)); err != nil {
			b.Fatal(err)
		}
		i++
		if i%1000 == 0 {
			b.StopTimer()
			if err := m.Flush(); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
	}
}

// BenchmarkFlush20x3 measures a whole invocation: one per-invocation
// dimension (three with service and env), 20 metrics of one value each,
// and the Flush that encodes and writes the document.
func BenchmarkFlush20x3(b *testing.B) {
	m := newBench(b)
	b.ReportAllocs()
	for b.Loop() {
		if err := m.AddDimension("tenant", "acme"); err != nil {
			b.Fatal(err)
		}
		for i, name := range benchNames {
			if err := m.Add(name, Milliseconds, 1.5*float64(i)); err != nil {
				b.Fatal(err)
			}
		}
		if err := m.Flush(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEncodingJSONBaseline marshals the same document, built once as
// a map[string]any, with encoding/json. Building the map is not timed, so
// the baseline is only the marshalling and write.
func BenchmarkEncodingJSONBaseline(b *testing.B) {
	defs := make([]any, len(benchNames))
	doc := map[string]any{"service": "svc", "env": "prod", "tenant": "acme"}
	for i, name := range benchNames {
		defs[i] = map[string]any{"Name": name, "Unit": "Milliseconds"}
		doc[name] = 1.5 * float64(i)
	}
	doc["_aws"] = map[string]any{
		"Timestamp": testTime.UnixMilli(),
		"CloudWatchMetrics": []any{map[string]any{
			"Namespace":  "Bench",
			"Dimensions": [][]string{{"service", "env", "tenant"}},
			"Metrics":    defs,
		}},
	}
	b.ReportAllocs()
	for b.Loop() {
		out, err := json.Marshal(doc)
		if err != nil {
			b.Fatal(err)
		}
		out = append(out, '\n')
		if _, err := io.Discard.Write(out); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBatchFlush20x3 is BenchmarkFlush20x3 on a new batch per
// invocation, as a process running many invocations at once uses emf.
func BenchmarkBatchFlush20x3(b *testing.B) {
	m := newBench(b)
	b.ReportAllocs()
	for b.Loop() {
		benchInvocation(b, m.NewBatch())
	}
}

// BenchmarkBatchFlush20x3Parallel runs BenchmarkBatchFlush20x3 on
// GOMAXPROCS goroutines at once, all writing through one writer.
func BenchmarkBatchFlush20x3Parallel(b *testing.B) {
	m := newBench(b)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			benchInvocation(b, m.NewBatch())
		}
	})
}

func benchInvocation(b *testing.B, batch *Batch) {
	if err := batch.AddDimension("tenant", "acme"); err != nil {
		b.Error(err)
	}
	for i, name := range benchNames {
		if err := batch.Add(name, Milliseconds, 1.5*float64(i)); err != nil {
			b.Error(err)
		}
	}
	if err := batch.Flush(); err != nil {
		b.Error(err)
	}
}
