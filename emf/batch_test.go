package emf

import (
	"bytes"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// exclusiveWriter is a writer that is not safe for concurrent use: it fails
// the test when two Writes overlap, and records each Write as one entry.
type exclusiveWriter struct {
	t      testing.TB
	active atomic.Int32
	writes [][]byte // no lock: overlapping Writes are a race -race reports
}

func (w *exclusiveWriter) Write(p []byte) (int, error) {
	if w.active.Add(1) != 1 {
		w.t.Errorf("two Writes at once")
	}
	defer w.active.Add(-1)
	w.writes = append(w.writes, bytes.Clone(p))
	return len(p), nil
}

// TestBatchesConcurrent flushes many batches of one Metrics at once, each
// with its own dimension, properties and metrics, and checks that every
// document holds exactly one batch's members and that every Write is one
// whole line. Run with -race.
func TestBatchesConcurrent(t *testing.T) {
	w := &exclusiveWriter{t: t}
	m, err := New(WithNamespace("Test"), WithService("svc"), WithWriter(w), withClock(fixedClock), withDisabled(false))
	mustNil(t, err)
	const (
		batches = 32
		rounds  = 20
	)
	var wg sync.WaitGroup
	for i := range batches {
		wg.Go(func() {
			b := m.NewBatch()
			id := "req-" + strconv.Itoa(i)
			for r := range rounds {
				mustNil(t, b.AddDimension("tenant", "t"+strconv.Itoa(i)))
				mustNil(t, b.SetProperty("requestId", id))
				mustNil(t, b.SetProperty("round", r))
				mustNil(t, b.Add("Own"+strconv.Itoa(i), Count, float64(r)))
				b.AddMetric("Shared", "Count", float64(i))
				if err := b.Flush(); err != nil {
					t.Errorf("Flush() = %v", err)
				}
			}
		})
	}
	wg.Wait()

	if len(w.writes) != batches*rounds {
		t.Fatalf("%d Writes, want %d: one per document", len(w.writes), batches*rounds)
	}
	seen := map[string]int{}
	for _, p := range w.writes {
		if bytes.Count(p, []byte("\n")) != 1 || !bytes.HasSuffix(p, []byte("\n")) {
			t.Fatalf("Write %q is not exactly one line", p)
		}
		docs, err := validateOutput(p)
		mustNil(t, err)
		d := docs[0]
		var id string
		mustNil(t, strictUnmarshal(d.Root["requestId"], &id))
		i, err := strconv.Atoi(strings.TrimPrefix(id, "req-"))
		mustNil(t, err)
		var round int
		mustNil(t, strictUnmarshal(d.Root["round"], &round))
		want := map[string][]float64{"Own" + strconv.Itoa(i): {float64(round)}, "Shared": {float64(i)}}
		if !reflect.DeepEqual(d.Values, want) {
			t.Errorf("document of %s round %d: values %v, want %v", id, round, d.Values, want)
		}
		if got, want := d.Dimensions["tenant"], "t"+strconv.Itoa(i); got != want {
			t.Errorf("document of %s: tenant %q, want %q", id, got, want)
		}
		seen[id]++
	}
	for i := range batches {
		if id := "req-" + strconv.Itoa(i); seen[id] != rounds {
			t.Errorf("%s: %d documents, want %d", id, seen[id], rounds)
		}
	}
}

// TestBatchIsolation checks that a batch's members stay out of the shared
// batch and of other batches, and that default dimensions apply to all.
func TestBatchIsolation(t *testing.T) {
	m, buf := newTest(t, WithDefaultDimensions(map[string]string{"env": "prod"}))
	a, b := m.NewBatch(), m.NewBatch()
	mustNil(t, a.Add("A", Count, 1))
	mustNil(t, a.SetProperty("who", "a"))
	mustNil(t, b.Add("B", Count, 2))
	mustNil(t, b.AddDimension("env", "dev")) // overrides the default in b only
	mustNil(t, m.Add("Shared", Count, 3))

	mustNil(t, b.Flush())
	mustNil(t, m.Flush())
	mustNil(t, a.Flush())
	docs, err := validateOutput(buf.Bytes())
	mustNil(t, err)
	if len(docs) != 3 {
		t.Fatalf("%d documents, want 3", len(docs))
	}
	tests := []struct {
		values map[string][]float64
		env    string
		props  int // members beyond _aws, dimensions and metrics
	}{
		{map[string][]float64{"B": {2}}, "dev", 0},
		{map[string][]float64{"Shared": {3}}, "prod", 0},
		{map[string][]float64{"A": {1}}, "prod", 1},
	}
	for i, tt := range tests {
		d := docs[i]
		if !reflect.DeepEqual(d.Values, tt.values) || d.Dimensions["env"] != tt.env {
			t.Errorf("document %d: values %v env %q, want %v env %q", i, d.Values, d.Dimensions["env"], tt.values, tt.env)
		}
		if got := len(d.Root) - 1 - len(d.Dimensions) - len(d.Values); got != tt.props {
			t.Errorf("document %d: %d properties, want %d", i, got, tt.props)
		}
	}
}

// TestBatchReuse checks that a flushed batch is empty and usable again,
// and that its name rules start afresh.
func TestBatchReuse(t *testing.T) {
	m, buf := newTest(t)
	b := m.NewBatch()
	mustNil(t, b.Add("X", Count, 1))
	mustNil(t, b.Flush())
	n := len(buf.Bytes())
	if err := b.Flush(); err != nil || len(buf.Bytes()) != n {
		t.Errorf("second Flush() = %v and wrote %d bytes, want nil and nothing", err, len(buf.Bytes())-n)
	}
	mustNil(t, b.SetProperty("X", "now a property")) // X was a metric of the last flush only
	mustNil(t, b.Add("Y", Milliseconds, 2))
	if err := b.Add("Y", Count, 1); !errors.Is(err, ErrInvalid) {
		t.Errorf("Add() with another unit = %v, want ErrInvalid", err)
	}
	b.AddMetric("Z", "Furlongs", 1)
	if err := b.Flush(); !errors.Is(err, ErrInvalid) {
		t.Errorf("Flush() = %v, want the recorded ErrInvalid", err)
	}
	docs, err := validateOutput(buf.Bytes())
	mustNil(t, err)
	if len(docs) != 2 || !reflect.DeepEqual(docs[1].Values, map[string][]float64{"Y": {2}}) {
		t.Errorf("documents %+v, want X then Y", docs)
	}
}

// TestNilBatch: a nil batch records and writes nothing, and never panics.
func TestNilBatch(t *testing.T) {
	var b *Batch
	mustNil(t, b.Add("X", Count, 1))
	mustNil(t, b.AddHighResolution("Y", Count, 1))
	b.AddMetric("Z", "Count", 1)
	mustNil(t, b.AddDimension("k", "v"))
	mustNil(t, b.SetProperty("p", 1))
	mustNil(t, b.CaptureColdStart("fn"))
	mustNil(t, b.Flush())
}
