package emf

import (
	"errors"
	"fmt"
)

// Flush writes what was added since the last Flush, as embedded metric
// format documents of one line each, and clears the metrics, dimensions
// and properties added since; default dimensions stay. Metrics beyond the
// format's limits (100 per document, 100 values per metric, 1 MiB) are
// split over several documents, never dropped. With no metrics it writes
// nothing. It returns the errors AddMetric recorded, the writer's error,
// and [ErrNoMetrics] if [WithErrorOnEmpty] asked for it, all joined. No
// lock is held while writing.
func (m *Metrics) Flush() error {
	m.mu.Lock()
	s := m.cur
	m.cur = m.spare
	if m.cur == nil {
		m.cur = newState()
	}
	m.spare = nil
	enc := m.enc
	m.enc = nil
	m.mu.Unlock()
	if enc == nil {
		enc = new(encoder)
	}

	var errs []error
	errs = s.appendErrors(errs)
	if !m.disabled {
		errs = m.write(enc, s, errs)
	}

	s.reset()
	m.mu.Lock()
	if m.spare == nil {
		m.spare = s
	}
	if m.enc == nil {
		m.enc = enc
	}
	m.mu.Unlock()
	return errors.Join(errs...)
}

func (m *Metrics) write(enc *encoder, s *state, errs []error) []error {
	ts := m.now().UnixMilli()
	if s.coldStart {
		if err := m.coldStartDoc(enc, ts, s.functionName); err != nil {
			return append(errs, fmt.Errorf("%w: %w", ErrWrite, err))
		}
	}
	if len(s.metrics) == 0 {
		if m.errorOnEmpty {
			errs = append(errs, ErrNoMetrics)
		}
		return errs
	}
	if err := enc.write(m.w, m.namespace, ts, m.dimensions(enc, s), s.props, s.metrics); err != nil {
		errs = append(errs, fmt.Errorf("%w: %w", ErrWrite, err))
	}
	return errs
}

// dimensions returns the default dimensions, overridden by and followed by
// the invocation's, in enc's scratch slice.
func (m *Metrics) dimensions(enc *encoder, s *state) []dim {
	dims := append(enc.dims[:0], m.defaults...)
	for _, d := range s.dims {
		if i, ok := m.defaultIndex[d.key]; ok {
			dims[i].value = d.value
		} else {
			dims = append(dims, d)
		}
	}
	enc.dims = dims
	return dims
}
