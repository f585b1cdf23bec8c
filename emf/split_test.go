package emf

import (
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// TestSplits checks every limit: each document must pass the validator, the
// document count must be what the limits require, and decoding all of them
// must give back every value added, in order.
func TestSplits(t *testing.T) {
	tests := []struct {
		name     string
		metrics  int
		values   int
		propSize int // bytes of one string property, 0 for none
		wantDocs int
	}{
		{"one value", 1, 1, 0, 1},
		{"100 metrics", 100, 1, 0, 1},
		{"101 metrics", 101, 1, 0, 2},
		{"250 metrics", 250, 1, 0, 3},
		{"100 values", 1, 100, 0, 1},
		{"101 values", 1, 101, 0, 2},
		{"250 values", 1, 250, 0, 3},
		{"150 metrics of 150 values", 150, 150, 0, 3},
		{"100 metrics of 101 values", 100, 101, 0, 2},
		{"size: largest property", 100, 100, maxPropertyBytes - 100, 2},
		{"size and values: largest property", 100, 300, maxPropertyBytes - 100, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m, buf := newTest(t, WithDefaultDimensions(map[string]string{"env": "prod"}))
			mustNil(t, m.AddDimension("tenant", "t1"))
			if tt.propSize > 0 {
				mustNil(t, m.SetProperty("blob", strings.Repeat("x", tt.propSize)))
			}
			rng := rand.New(rand.NewPCG(1, 2))
			want := map[string][]float64{}
			for v := range tt.values {
				for i := range tt.metrics {
					name := key("Metric", i)
					x := rng.NormFloat64() * 1e6
					if v%3 == 0 {
						x = float64(v)
					}
					mustNil(t, m.Add(name, Milliseconds, x))
					want[name] = append(want[name], x)
				}
			}
			docs := flushDocs(t, m, buf)
			if len(docs) != tt.wantDocs {
				t.Errorf("Flush() wrote %d documents, want %d", len(docs), tt.wantDocs)
			}
			if got := allValues(docs); !reflect.DeepEqual(got, want) {
				t.Errorf("round trip lost or changed values: %d metrics back, want %d", len(got), len(want))
			}
			wantDims := map[string]string{"service": "svc", "env": "prod", "tenant": "t1"}
			for i, d := range docs {
				if !reflect.DeepEqual(d.Dimensions, wantDims) {
					t.Errorf("document %d dimensions = %v, want %v", i, d.Dimensions, wantDims)
				}
				if _, ok := d.Root["blob"]; ok != (tt.propSize > 0) {
					t.Errorf("document %d has the property: %v, want %v", i, ok, tt.propSize > 0)
				}
			}
		})
	}
}

// TestSplitFillsDocuments checks that a size split packs documents close to
// the limit rather than splitting early.
func TestSplitFillsDocuments(t *testing.T) {
	m, buf := newTest(t)
	mustNil(t, m.SetProperty("blob", strings.Repeat("x", maxPropertyBytes-100)))
	for i := range 10_000 {
		mustNil(t, m.Add(key("M", i%100), Count, 1.2345678901234567))
	}
	docs := flushDocs(t, m, buf)
	for i, d := range docs[:len(docs)-1] {
		if d.Size < maxDocumentBytes-64 {
			t.Errorf("document %d of %d has %d bytes, want within 64 of %d", i, len(docs), d.Size, maxDocumentBytes)
		}
	}
}

func TestSplitKeepsResolution(t *testing.T) {
	m, buf := newTest(t)
	for range 150 {
		mustNil(t, m.AddHighResolution("Fast", Milliseconds, 1))
	}
	docs := flushDocs(t, m, buf)
	for i, d := range docs {
		if want := []emfDef{{Name: "Fast", Unit: "Milliseconds", StorageResolution: 1}}; !reflect.DeepEqual(d.Defs, want) {
			t.Errorf("document %d definitions = %+v, want %+v", i, d.Defs, want)
		}
	}
}

// TestLargestDocument fills every field to its limit, with the characters
// that grow most when escaped, and checks that Flush still writes valid
// documents holding every value.
func TestLargestDocument(t *testing.T) {
	defaults := map[string]string{}
	for i := range 29 {
		k := strconv.Itoa(i) + strings.Repeat(`\`, 255-len(strconv.Itoa(i)))
		defaults[k] = strings.Repeat(`"`, 1024)
	}
	m, buf := newTest(t, WithNamespace(strings.Repeat(`\`, 255)), WithDefaultDimensions(defaults))
	mustNil(t, m.SetProperty("p", strings.Repeat("\x00", (maxPropertyBytes-20)/6)))
	name := strings.Repeat("\u2028", 254) + "x"
	for i := range 250 {
		mustNil(t, m.Add(name, Count, -1.2345678901234567e-300*float64(i+1)))
	}
	docs := flushDocs(t, m, buf)
	if got := len(allValues(docs)[name]); got != 250 {
		t.Errorf("%d values back, want 250", got)
	}
	if len(docs[0].DimSets[0]) != 30 {
		t.Errorf("%d dimensions, want 30", len(docs[0].DimSets[0]))
	}
}
