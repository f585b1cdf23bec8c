package emf

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"
)

// Metrics collects metrics, dimensions and properties for one invocation
// and writes them as embedded metric format documents on [Metrics.Flush].
// Create it with [New], once per process. All its methods are safe for
// concurrent use.
type Metrics struct {
	// Set by New, then read-only.
	namespace    string
	service      string
	w            io.Writer
	now          func() time.Time
	errorOnEmpty bool
	disabled     bool
	defaults     []dim          // the service first, then sorted by key
	defaultIndex map[string]int // key -> index in defaults

	mu    sync.Mutex // guards cur, spare and enc
	cur   *state     // what the next Flush writes
	spare *state     // a reset state for the Flush after, nil while one is being written
	enc   *encoder   // the encoder's buffers, nil while a Flush uses them
}

// New returns a Metrics configured by opts and the Powertools environment
// variables. It fails if there is no valid namespace (unless disabled), if
// a dimension is invalid, or if there are more than 30 of them.
func New(opts ...Option) (*Metrics, error) {
	o := options{writer: os.Stdout, now: time.Now}
	for _, opt := range opts {
		opt(&o)
	}
	if err := o.fromEnv(); err != nil {
		return nil, err
	}
	if o.writer == nil {
		return nil, fmt.Errorf("%w: nil writer", ErrInvalidOption)
	}
	if o.now == nil {
		return nil, fmt.Errorf("%w: nil clock", ErrInvalidOption)
	}
	if o.namespace == "" && !o.disabled {
		return nil, ErrNoNamespace
	}
	if o.namespace != "" {
		if err := checkNamespace(o.namespace); err != nil {
			return nil, err
		}
	}
	m := &Metrics{
		namespace:    o.namespace,
		service:      o.service,
		w:            o.writer,
		now:          o.now,
		errorOnEmpty: o.errorOnEmpty,
		disabled:     o.disabled,
		defaultIndex: make(map[string]int),
		cur:          newState(),
	}
	if o.service != "" {
		if err := checkDimension(serviceKey, o.service); err != nil {
			return nil, err
		}
		m.defaults = append(m.defaults, dim{serviceKey, o.service})
	}
	for _, k := range slices.Sorted(maps.Keys(o.defaults)) {
		if err := checkDimension(k, o.defaults[k]); err != nil {
			return nil, err
		}
		if k == serviceKey && o.service != "" {
			return nil, fmt.Errorf("%w: %s is set by the service", ErrNameInUse, serviceKey)
		}
		m.defaults = append(m.defaults, dim{k, o.defaults[k]})
	}
	if len(m.defaults) > maxDimensions {
		return nil, fmt.Errorf("%w: %d", ErrTooManyDimensions, len(m.defaults))
	}
	for i, d := range m.defaults {
		m.defaultIndex[d.key] = i
	}
	return m, nil
}

const serviceKey = "service"

// Add records value v for the metric name, in unit, at standard (60 second)
// resolution. Values for one name accumulate until Flush. It fails, and
// records nothing, if the name, unit or value is invalid, if name was added
// since the last flush with another unit or resolution, or if name is a
// dimension or property.
func (m *Metrics) Add(name string, unit Unit, v float64) error {
	return m.add(name, unit, false, v)
}

// AddHighResolution is [Metrics.Add] for a high-resolution metric, which
// CloudWatch stores at 1 second resolution (StorageResolution 1).
func (m *Metrics) AddHighResolution(name string, unit Unit, v float64) error {
	return m.add(name, unit, true, v)
}

// AddMetric is [Metrics.Add] with the unit given by its name, as
// [ParseUnit] reads it. It satisfies the one-method metrics interfaces of
// other packages, such as lockcore's. An error is not lost: the next Flush
// returns it, joined with any others.
func (m *Metrics) AddMetric(name, unit string, value float64) {
	u, err := ParseUnit(unit)
	if err == nil {
		err = m.add(name, u, false, value)
	}
	if err != nil {
		m.mu.Lock()
		m.cur.record(fmt.Errorf("metric %s: %w", quote(name), err))
		m.mu.Unlock()
	}
}

func (m *Metrics) add(name string, unit Unit, highRes bool, v float64) error {
	if err := checkValue(v); err != nil {
		return fmt.Errorf("metric %s: %w", quote(name), err)
	}
	if !unit.valid() {
		return fmt.Errorf("metric %s: %w: %s", quote(name), ErrUnknownUnit, quote(string(unit)))
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.cur
	if i, ok := s.index[name]; ok {
		mt := &s.metrics[i]
		if mt.unit != unit || mt.highRes != highRes {
			return fmt.Errorf("%w: %s was %s, resolution %d", ErrMetricRedefined, quote(name), mt.unit, resolution(mt.highRes))
		}
		mt.values = append(mt.values, v)
		return nil
	}
	if err := checkMetricName(name); err != nil {
		return err
	}
	if err := m.nameFree(s, name, "metric"); err != nil {
		return err
	}
	mt := s.newMetric(name, unit, highRes)
	mt.values = append(mt.values, v)
	return nil
}

// nameFree reports an error if name is already a member of a kind other
// than kind. The caller holds m.mu.
func (m *Metrics) nameFree(s *state, name, kind string) error {
	var other string
	switch {
	case kind != "metric" && s.isMetric(name):
		other = "metric"
	case kind != "property" && s.isProperty(name):
		other = "property"
	case kind != "dimension" && m.isDimension(s, name):
		other = "dimension"
	}
	if other != "" {
		return fmt.Errorf("%w: %s %s is a %s", ErrNameInUse, kind, quote(name), other)
	}
	return nil
}

func (m *Metrics) isDimension(s *state, name string) bool {
	for _, d := range m.defaults {
		if d.key == name {
			return true
		}
	}
	return s.dim(name) >= 0
}

// AddDimension adds a dimension to the documents of the next Flush, which
// clears it. A key that is a default dimension overrides its value until
// then. It fails if the key or value is invalid, if the key is a metric or
// a property, or if there would be more than 30 dimensions.
func (m *Metrics) AddDimension(key, value string) error {
	if err := checkDimension(key, value); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.cur
	if err := m.nameFree(s, key, "dimension"); err != nil {
		return err
	}
	if i := s.dim(key); i >= 0 {
		s.dims[i].value = value
		return nil
	}
	_, isDefault := m.defaultIndex[key]
	if !isDefault {
		if len(m.defaults)+s.extraDims >= maxDimensions {
			return fmt.Errorf("%w: adding %s", ErrTooManyDimensions, quote(key))
		}
		s.extraDims++
	}
	s.dims = append(s.dims, dim{key, value})
	return nil
}

// SetProperty adds a member that is not a metric, such as a request id, to
// the documents of the next Flush, which clears it. v is marshalled with
// encoding/json now, so later changes to v are not seen. It fails if the
// key is invalid or is a metric or dimension, if v cannot be marshalled, or
// if the properties would not fit in a document.
func (m *Metrics) SetProperty(key string, v any) error {
	if err := checkPropertyKey(key); err != nil {
		return err
	}
	raw, err := marshalProperty(v)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrInvalidProperty, quote(key), err)
	}
	size := propertySize(key, raw)
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.cur
	if err := m.nameFree(s, key, "property"); err != nil {
		return err
	}
	old := 0
	i, ok := s.propIndex[key]
	if ok {
		old = propertySize(key, s.props[i].raw)
	}
	if s.propBytes-old+size > maxPropertyBytes {
		return fmt.Errorf("%w: %d bytes with %s", ErrPropertiesTooLarge, s.propBytes-old+size, quote(key))
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

// marshalProperty encodes v as JSON: strings, booleans and integers, the
// usual properties (request ids, lock ids, fences), directly, and anything
// else with encoding/json.
func marshalProperty(v any) ([]byte, error) {
	switch x := v.(type) {
	case string:
		if utf8.ValidString(x) {
			return appendString(nil, x), nil
		}
	case bool:
		return strconv.AppendBool(nil, x), nil
	case int:
		return strconv.AppendInt(nil, int64(x), 10), nil
	case int64:
		return strconv.AppendInt(nil, x, 10), nil
	}
	return json.Marshal(v)
}

// propertySize is the encoded size of ,"key":raw.
func propertySize(key string, raw []byte) int {
	var buf [128]byte // keys are short: measured on the stack
	return len(appendString(buf[:0], key)) + len(raw) + 2
}

func resolution(highRes bool) int {
	if highRes {
		return 1
	}
	return 60
}
