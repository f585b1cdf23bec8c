package emf

import (
	"errors"
	"fmt"
)

// Flush writes what was added to the batch since its last Flush, as
// embedded metric format documents of one line and one Write call each,
// and empties the batch; default dimensions stay. Metrics beyond the
// format's limits (100 per document, 100 values per metric, 1 MiB) are
// split over several documents, never dropped. With no metrics it writes
// nothing. It returns the errors AddMetric recorded and the writer's
// error ([ErrWrite]), joined. The
// batch's lock is not held while encoding and writing, and the writer's
// lock only for each Write.
func (b *Batch) Flush() error {
	if b == nil {
		return nil
	}
	b.mu.Lock()
	s := b.cur
	b.cur = nil
	b.mu.Unlock()
	m := b.m
	if s == nil {
		s = m.getState()
	}
	enc, _ := m.encoders.Get().(*encoder)
	if enc == nil {
		enc = new(encoder)
	}

	var errs []error
	errs = s.appendErrors(errs)
	if !m.disabled {
		errs = m.write(enc, s, errs)
	}

	s.reset()
	m.states.Put(s)
	m.encoders.Put(enc)
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
		return errs
	}
	if err := enc.write(&m.out, m.namespace, ts, m.dimensions(enc, s), s.props, s.metrics); err != nil {
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
