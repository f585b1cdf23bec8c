package emf

import (
	"reflect"
	"strconv"
	"sync"
	"testing"
)

// TestConcurrent adds, sets and flushes from many goroutines at once. Run
// with -race. Every value added must come out exactly once, whichever
// Flush writes it.
func TestConcurrent(t *testing.T) {
	m, buf := newTest(t)
	const (
		workers = 8
		adds    = 500
	)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			name := "Worker" + strconv.Itoa(w)
			for i := range adds {
				if err := m.Add(name, Count, 1); err != nil {
					t.Errorf("Add() = %v", err)
				}
				m.AddMetric("Shared", "Count", 2)
				if err := m.AddDimension("tenant", "t"+strconv.Itoa(w)); err != nil {
					t.Errorf("AddDimension() = %v", err)
				}
				if err := m.SetProperty("last", i); err != nil {
					t.Errorf("SetProperty() = %v", err)
				}
				if i%50 == 0 {
					if err := m.Flush(); err != nil {
						t.Errorf("Flush() = %v", err)
					}
				}
			}
		})
	}
	wg.Wait()
	mustNil(t, m.Flush())

	docs, err := validateOutput(buf.Bytes())
	mustNil(t, err)
	sums := map[string]float64{}
	for name, vals := range allValues(docs) {
		for _, v := range vals {
			sums[name] += v
		}
	}
	want := map[string]float64{"Shared": 2 * workers * adds}
	for w := range workers {
		want["Worker"+strconv.Itoa(w)] = adds
	}
	if !reflect.DeepEqual(sums, want) {
		t.Errorf("sums = %v, want %v", sums, want)
	}
}
