package emf

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
)

// Metrics is the embedded metric format writer of a process: its
// namespace, service, default dimensions and writer, and the [Batch]es that
// collect the metrics of each invocation. Create it with [New], once per
// process. Its own Add, AddDimension, SetProperty and Flush methods are
// those of one shared batch, for a process that runs one invocation at a
// time; with several at once, give each its own batch with
// [Metrics.NewBatch]. All its methods are safe for concurrent use.
type Metrics struct {
	// Set by New, then read-only.
	namespace    string
	service      string
	now          func() time.Time
	disabled     bool
	functionName string         // POWERTOOLS_METRICS_FUNCTION_NAME; "" when not set
	defaults     []dim          // the service first, then sorted by key
	defaultIndex map[string]int // key -> index in defaults

	out       lockedWriter // every batch writes its documents through it
	coldTaken atomic.Bool  // set by the first CaptureColdStart
	states    sync.Pool    // of *state, reset, for the batches
	encoders  sync.Pool    // of *encoder, for the flushes

	shared Batch // the batch of Metrics' own Add, SetProperty and Flush
}

// lockedWriter makes each document one Write call on w under mu, so that
// batches flushing at the same time never interleave their lines. With
// pretty set (POWERTOOLS_DEV), it indents each document first.
type lockedWriter struct {
	mu     sync.Mutex // guards w and buf; held only for one Write
	w      io.Writer
	pretty bool
	buf    bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.pretty {
		return l.w.Write(p)
	}
	l.buf.Reset()
	if err := json.Indent(&l.buf, p, "", "  "); err != nil {
		return 0, err
	}
	if _, err := l.w.Write(l.buf.Bytes()); err != nil {
		return 0, err
	}
	return len(p), nil
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
		return nil, fmt.Errorf("%w option: nil writer", ErrInvalid)
	}
	if o.now == nil {
		return nil, fmt.Errorf("%w option: nil clock", ErrInvalid)
	}
	if o.namespace == "" && !o.disabled {
		return nil, fmt.Errorf("%w: no namespace: neither WithNamespace nor %s gives one", ErrInvalid, envNamespace)
	}
	if o.namespace != "" {
		if err := checkNamespace(o.namespace); err != nil {
			return nil, err
		}
	}
	m := &Metrics{
		namespace:    o.namespace,
		service:      o.service,
		now:          o.now,
		disabled:     o.disabled,
		functionName: o.functionName,
		defaultIndex: make(map[string]int),
		out:          lockedWriter{w: o.writer, pretty: o.pretty},
	}
	m.shared.m = m
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
			return nil, fmt.Errorf("%w: name already in use: %s is set by the service", ErrInvalid, serviceKey)
		}
		m.defaults = append(m.defaults, dim{k, o.defaults[k]})
	}
	if len(m.defaults) > maxDimensions {
		return nil, fmt.Errorf("%w: too many dimensions: %d", ErrInvalid, len(m.defaults))
	}
	for i, d := range m.defaults {
		m.defaultIndex[d.key] = i
	}
	return m, nil
}

const serviceKey = "service"

// NewBatch returns an empty batch for one invocation's metrics, dimensions
// and properties, written with m's namespace, service, default dimensions
// and writer. It is safe for concurrent use.
func (m *Metrics) NewBatch() *Batch { return &Batch{m: m} }

// Add records value v for the metric name, in unit, at standard (60 second)
// resolution, in the shared batch. Values for one name accumulate until
// Flush. It fails, and records nothing, if the name, unit or value is
// invalid, if name was added since the last flush with another unit or
// resolution, or if name is a dimension or property.
func (m *Metrics) Add(name string, unit Unit, v float64) error {
	return m.shared.add(name, unit, false, v)
}

// AddHighResolution is [Metrics.Add] for a high-resolution metric, which
// CloudWatch stores at 1 second resolution (StorageResolution 1).
func (m *Metrics) AddHighResolution(name string, unit Unit, v float64) error {
	return m.shared.add(name, unit, true, v)
}

// AddMetric is [Metrics.Add] with the unit given by its name, spelled as
// CloudWatch spells it ("Count", "Bytes/Second"). It satisfies the one-method metrics interfaces of
// other packages, such as lockcore's. An error is not lost: the next Flush
// returns it, joined with any others.
func (m *Metrics) AddMetric(name, unit string, value float64) {
	m.shared.AddMetric(name, unit, value)
}

// AddDimension adds a dimension to the documents of the next Flush, which
// clears it. A key that is a default dimension overrides its value until
// then. It fails if the key or value is invalid, if the key is a metric or
// a property, or if there would be more than 30 dimensions.
func (m *Metrics) AddDimension(key, value string) error {
	return m.shared.AddDimension(key, value)
}

// SetProperty adds a member that is not a metric, such as a request id, to
// the documents of the next Flush, which clears it. v is marshalled with
// encoding/json now, so later changes to v are not seen. It fails if the
// key is invalid or is a metric or dimension, if v cannot be marshalled, or
// if the properties would not fit in a document.
func (m *Metrics) SetProperty(key string, v any) error {
	return m.shared.SetProperty(key, v)
}

// Flush writes what was added to the shared batch since the last Flush, as
// [Batch.Flush] does.
func (m *Metrics) Flush() error { return m.shared.Flush() }

// getState returns a reset state from the pool, or a new one.
func (m *Metrics) getState() *state {
	if s, ok := m.states.Get().(*state); ok {
		return s
	}
	return newState()
}

// isDefault reports whether key is a default dimension (at most 30: a
// scan beats the map).
func (m *Metrics) isDefault(key string) bool {
	for _, d := range m.defaults {
		if d.key == key {
			return true
		}
	}
	return false
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
