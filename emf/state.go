package emf

import "fmt"

type metric struct {
	name    string
	unit    Unit
	highRes bool
	values  []float64
}

type dim struct{ key, value string }

type property struct {
	key string
	raw []byte // the value, marshalled when it was set
}

// state is everything one Flush writes. Metrics keeps two and swaps them at
// Flush, so that writing happens outside its mutex and a steady stream of
// invocations reuses the same slices and maps.
type state struct {
	metrics []metric // in the order first added; entries past len keep their value slices for reuse
	index   map[string]int

	dims      []dim // per-invocation dimensions, in the order added
	extraDims int   // how many of dims are not default dimensions

	props     []property
	propIndex map[string]int
	propBytes int // encoded size of props

	errs    []error // recorded by AddMetric for the next Flush
	dropped int     // errors past maxErrors

	coldStart    bool
	functionName string
}

func newState() *state {
	return &state{index: make(map[string]int), propIndex: make(map[string]int)}
}

func (s *state) reset() {
	s.metrics = s.metrics[:0]
	clear(s.index)
	s.dims = s.dims[:0]
	s.extraDims = 0
	clear(s.props)
	s.props = s.props[:0]
	clear(s.propIndex)
	s.propBytes = 0
	clear(s.errs)
	s.errs = s.errs[:0]
	s.dropped = 0
	s.coldStart = false
	s.functionName = ""
}

func (s *state) record(err error) {
	if len(s.errs) < maxErrors {
		s.errs = append(s.errs, err)
		return
	}
	s.dropped++
}

// appendErrors appends the recorded errors to errs.
func (s *state) appendErrors(errs []error) []error {
	errs = append(errs, s.errs...)
	if s.dropped > 0 {
		errs = append(errs, fmt.Errorf("emf: %d more errors not kept", s.dropped))
	}
	return errs
}

func (s *state) isMetric(name string) bool {
	_, ok := s.index[name]
	return ok
}

func (s *state) isProperty(name string) bool {
	if len(s.props) == 0 {
		return false
	}
	_, ok := s.propIndex[name]
	return ok
}

func (s *state) dim(key string) int {
	for i := range s.dims {
		if s.dims[i].key == key {
			return i
		}
	}
	return -1
}

// newMetric appends a metric, reusing a value slice left from an earlier
// invocation when there is one.
func (s *state) newMetric(name string, unit Unit, highRes bool) *metric {
	n := len(s.metrics)
	if n < cap(s.metrics) {
		s.metrics = s.metrics[:n+1]
	} else {
		s.metrics = append(s.metrics, metric{})
	}
	mt := &s.metrics[n]
	mt.name, mt.unit, mt.highRes, mt.values = name, unit, highRes, mt.values[:0]
	s.index[name] = n
	return mt
}
