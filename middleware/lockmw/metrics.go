package lockmw

import (
	"io"
	"os"
	"sync"

	"github.com/herdlock/herdlock/emf"
)

// Metric property names: per-invocation values written as EMF properties,
// never as dimensions, because every distinct dimension value is a separate
// (billed) CloudWatch metric.
const (
	propLockID    = "lockId"
	propLockGroup = "lockGroup"
	propRequestID = "requestId"
	propOutcome   = "lockOutcome"
	propFence     = "fence"
)

// flushMu serialises the transfer of one invocation's metrics into an
// emf.Metrics and its Flush, so that invocations running at the same time in
// one process (tests, Lambda managed concurrency) each write their own
// documents with their own lock id.
var flushMu sync.Mutex

// sample is one measurement.
type sample struct {
	name, unit string
	v          float64
}

// recorder collects the lock's measurements for one invocation; it is the
// lockcore.Metrics of that invocation's Lock. It is safe for concurrent use
// (the lock's keeper records from its own goroutine).
type recorder struct {
	mu      sync.Mutex // guards samples
	samples []sample
	buf     [24]sample
}

func newRecorder() *recorder {
	r := &recorder{}
	r.samples = r.buf[:0]
	return r
}

// AddMetric implements lockcore.Metrics.
func (r *recorder) AddMetric(name, unit string, v float64) {
	r.mu.Lock()
	r.samples = append(r.samples, sample{name, unit, v})
	r.mu.Unlock()
}

// flushInto writes the samples and the invocation's properties to m and
// flushes it once.
func (r *recorder) flushInto(m *emf.Metrics, coldStart func(), props [5]prop) error {
	r.mu.Lock()
	samples := r.samples
	r.samples = nil
	r.mu.Unlock()
	flushMu.Lock()
	defer flushMu.Unlock()
	if coldStart != nil {
		coldStart()
	}
	for _, s := range samples {
		m.AddMetric(s.name, s.unit, s.v)
	}
	for _, p := range props {
		if p.v == nil {
			continue
		}
		_ = m.SetProperty(p.k, p.v) // keys are constants; values are strings and numbers
	}
	return m.Flush()
}

type prop struct {
	k string
	v any
}

// newDefaultMetrics returns the metrics of [WithMetrics]' default: an
// emf.Metrics on w, with namespace and service from the Powertools variables
// or else DefaultNamespace and the function name.
func newDefaultMetrics(w io.Writer) (*emf.Metrics, error) {
	opts := []emf.Option{emf.WithWriter(w)}
	if os.Getenv(emf.EnvNamespace) == "" {
		opts = append(opts, emf.WithNamespace(DefaultNamespace))
	}
	if os.Getenv(emf.EnvService) == "" {
		svc := os.Getenv(envFunctionName)
		if svc == "" {
			svc = DefaultNamespace
		}
		opts = append(opts, emf.WithService(svc))
	}
	return emf.New(opts...)
}
