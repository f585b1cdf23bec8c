package emf

import (
	"fmt"
	"sync"
)

// Batch collects the metrics, dimensions and properties of one invocation
// and writes them, on [Batch.Flush], as documents of their own through its
// [Metrics]' writer: what one batch records never appears in another's
// documents, and documents written at the same time never interleave.
// Create one per invocation with [Metrics.NewBatch]; after a Flush it is
// empty and may be used again. A nil *Batch records nothing and writes
// nothing, without error. All its methods are safe for concurrent use.
type Batch struct {
	m *Metrics // read-only

	mu  sync.Mutex // guards cur
	cur *state     // what the next Flush writes; nil until first used
}

// state returns the batch's state, taking one from the pool when it has
// none. The caller holds b.mu.
func (b *Batch) state() *state {
	if b.cur == nil {
		b.cur = b.m.getState()
	}
	return b.cur
}

// Add is [Metrics.Add] for this batch.
func (b *Batch) Add(name string, unit Unit, v float64) error {
	return b.add(name, unit, false, v)
}

// AddHighResolution is [Metrics.AddHighResolution] for this batch.
func (b *Batch) AddHighResolution(name string, unit Unit, v float64) error {
	return b.add(name, unit, true, v)
}

// AddMetric is [Metrics.AddMetric] for this batch: the unit by its name,
// and an error kept for the next Flush. It satisfies lockcore's Metrics
// interface.
func (b *Batch) AddMetric(name, unit string, value float64) {
	if b == nil {
		return
	}
	if err := b.add(name, Unit(unit), false, value); err != nil {
		b.mu.Lock()
		b.state().record(err)
		b.mu.Unlock()
	}
}

func (b *Batch) add(name string, unit Unit, highRes bool, v float64) error {
	if b == nil {
		return nil
	}
	if err := checkValue(v); err != nil {
		return fmt.Errorf("metric %s: %w", quote(name), err)
	}
	if !unit.valid() {
		return fmt.Errorf("metric %s: %w unit: %s is not a CloudWatch unit", quote(name), ErrInvalid, quote(string(unit)))
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.state()
	if i, ok := s.index[name]; ok {
		mt := &s.metrics[i]
		if mt.unit != unit || mt.highRes != highRes {
			return fmt.Errorf("%w: metric %s redefined with another unit or resolution: it was %s, resolution %d", ErrInvalid, quote(name), mt.unit, resolution(mt.highRes))
		}
		mt.values = append(mt.values, v)
		return nil
	}
	if err := checkMetricName(name); err != nil {
		return err
	}
	if err := b.nameFree(s, name, "metric"); err != nil {
		return err
	}
	mt := s.newMetric(name, unit, highRes)
	mt.values = append(mt.values, v)
	return nil
}

// nameFree reports an error if name is already a member of a kind other
// than kind. The caller holds b.mu.
func (b *Batch) nameFree(s *state, name, kind string) error {
	var other string
	switch {
	case kind != "metric" && s.isMetric(name):
		other = "metric"
	case kind != "property" && s.isProperty(name):
		other = "property"
	case kind != "dimension" && (b.m.isDefault(name) || s.dim(name) >= 0):
		other = "dimension"
	}
	if other != "" {
		return fmt.Errorf("%w: name already in use: %s %s is a %s", ErrInvalid, kind, quote(name), other)
	}
	return nil
}

// AddDimension is [Metrics.AddDimension] for this batch.
func (b *Batch) AddDimension(key, value string) error {
	if b == nil {
		return nil
	}
	if err := checkDimension(key, value); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.state()
	if err := b.nameFree(s, key, "dimension"); err != nil {
		return err
	}
	if i := s.dim(key); i >= 0 {
		s.dims[i].value = value
		return nil
	}
	if !b.m.isDefault(key) {
		if len(b.m.defaults)+s.extraDims >= maxDimensions {
			return fmt.Errorf("%w: too many dimensions: adding %s", ErrInvalid, quote(key))
		}
		s.extraDims++
	}
	s.dims = append(s.dims, dim{key, value})
	return nil
}

// SetProperty is [Metrics.SetProperty] for this batch.
func (b *Batch) SetProperty(key string, v any) error {
	if b == nil {
		return nil
	}
	if err := checkPropertyKey(key); err != nil {
		return err
	}
	raw, err := marshalProperty(v)
	if err != nil {
		return fmt.Errorf("%w property: %s: %w", ErrInvalid, quote(key), err)
	}
	size := propertySize(key, raw)
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.state()
	if err := b.nameFree(s, key, "property"); err != nil {
		return err
	}
	old := 0
	i, ok := s.propIndex[key]
	if ok {
		old = propertySize(key, s.props[i].raw)
	}
	if s.propBytes-old+size > maxPropertyBytes {
		return fmt.Errorf("%w: properties too large: %d bytes with %s", ErrInvalid, s.propBytes-old+size, quote(key))
	}
	s.propBytes += size - old
	if ok {
		s.props[i].raw = raw
		return nil
	}
	s.propIndex[key] = len(s.props)
	s.props = append(s.props, property{key, raw})
	return nil
}
