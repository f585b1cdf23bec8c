package emf

import "os"

// CaptureColdStart records the ColdStart metric, a Count of 1, in the
// shared batch, as [Batch.CaptureColdStart] does.
func (m *Metrics) CaptureColdStart(functionName string) error {
	return m.shared.CaptureColdStart(functionName)
}

// CaptureColdStart records the ColdStart metric, a Count of 1, in this
// batch if this is the first call of its [Metrics] (of any of its batches),
// and does nothing after: with one Metrics per process, that is the
// process's first invocation. As Powertools
// does, the next Flush writes it as a document of its own whose only
// dimensions are function_name and service (each when known). The
// function name is POWERTOOLS_METRICS_FUNCTION_NAME when set, else functionName, else
// AWS_LAMBDA_FUNCTION_NAME. It fails, without
// using up the cold start, if functionName is not a valid dimension value.
// It is safe for concurrent use.
func (b *Batch) CaptureColdStart(functionName string) error {
	if b == nil {
		return nil
	}
	if b.m.functionName != "" {
		functionName = b.m.functionName
	}
	if functionName == "" {
		functionName = os.Getenv("AWS_LAMBDA_FUNCTION_NAME")
	}
	if functionName != "" {
		if err := checkDimension(functionNameKey, functionName); err != nil {
			return err
		}
	}
	if !b.m.coldTaken.CompareAndSwap(false, true) {
		return nil
	}
	b.mu.Lock()
	s := b.state()
	s.coldStart, s.functionName = true, functionName
	b.mu.Unlock()
	return nil
}

const (
	functionNameKey = "function_name"
	coldStartName   = "ColdStart"
)

// coldStartDoc writes the cold-start document.
func (m *Metrics) coldStartDoc(enc *encoder, ts int64, functionName string) error {
	dims := enc.dims[:0]
	if functionName != "" {
		dims = append(dims, dim{functionNameKey, functionName})
	}
	if m.service != "" {
		dims = append(dims, dim{serviceKey, m.service})
	}
	enc.dims = dims
	enc.one[0] = 1
	cold := metric{name: coldStartName, unit: Count, values: enc.one[:]}
	return enc.write(&m.out, m.namespace, ts, dims, nil, []metric{cold})
}
