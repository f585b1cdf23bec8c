package emf

import (
	"fmt"
	"io"
	"strconv"
)

// encoder holds the buffers of Flush, reused from one flush to the next.
type encoder struct {
	head []byte // the document up to the metric definitions, then the part between them and the values
	mid  int    // where the second part of head starts
	defs []byte // metric definitions of the document being built
	vals []byte // metric values of the document being built
	out  []byte // the assembled document
	offs []int  // per metric, how many of its values are written
	dims []dim  // scratch for the dimensions
	one  [1]float64
}

const docTail = "}\n"

// write writes metrics as as many documents as the limits require. Each
// document gets the same header, dimensions and properties, up to 100
// metric definitions, up to 100 values per metric, and at most
// maxDocumentBytes bytes. A metric with more values continues in the next
// document.
func (e *encoder) write(w io.Writer, ns string, ts int64, dims []dim, props []property, metrics []metric) error {
	e.header(ns, ts, dims, props)
	fixed := len(e.head) + len(docTail)

	offs := e.offs[:0]
	for range metrics {
		offs = append(offs, 0)
	}
	e.offs = offs
	left := len(metrics)
	start := 0 // each document starts after the last metric of the one before
	for left > 0 {
		e.defs, e.vals = e.defs[:0], e.vals[:0]
		count, first := 0, start
		for j := range metrics {
			i := (first + j) % len(metrics)
			mt := &metrics[i]
			if offs[i] == len(mt.values) {
				continue
			}
			if count == maxMetricsPerDocument {
				break
			}
			want := min(len(mt.values)-offs[i], maxValuesPerMetric)
			k := e.appendMetric(mt, offs[i], count > 0, fixed)
			if k == 0 {
				if count == 0 {
					return fmt.Errorf("metric %s does not fit in a document", quote(mt.name))
				}
				break
			}
			count++
			start = i + 1
			offs[i] += k
			if offs[i] == len(mt.values) {
				left--
			}
			if k < want {
				break // the document is full
			}
		}
		if err := e.flushDoc(w); err != nil {
			return err
		}
	}
	return nil
}

// appendMetric appends the definition of mt and up to 100 of its values
// from off on, as many as fit in the document, and returns how many. With
// none, it appends nothing.
func (e *encoder) appendMetric(mt *metric, off int, comma bool, fixed int) int {
	defsMark, valsMark := len(e.defs), len(e.vals)
	if comma {
		e.defs = append(e.defs, ',')
	}
	e.defs = append(e.defs, `{"Name":`...)
	nameStart := len(e.defs)
	e.defs = appendString(e.defs, mt.name)
	nameEnd := len(e.defs)
	e.defs = append(e.defs, `,"Unit":`...)
	e.defs = appendString(e.defs, string(mt.unit))
	if mt.highRes {
		e.defs = append(e.defs, `,"StorageResolution":1`...)
	}
	e.defs = append(e.defs, '}')

	e.vals = append(e.vals, ',')
	e.vals = append(e.vals, e.defs[nameStart:nameEnd]...)
	e.vals = append(e.vals, ':')
	n := min(len(mt.values)-off, maxValuesPerMetric)
	if n == 1 {
		e.vals = appendFloat(e.vals, mt.values[off])
		if fixed+len(e.defs)+len(e.vals) > maxDocumentBytes {
			e.defs, e.vals = e.defs[:defsMark], e.vals[:valsMark]
			return 0
		}
		return 1
	}
	e.vals = append(e.vals, '[')
	k := 0
	for ; k < n; k++ {
		mark := len(e.vals)
		if k > 0 {
			e.vals = append(e.vals, ',')
		}
		e.vals = appendFloat(e.vals, mt.values[off+k])
		if fixed+len(e.defs)+len(e.vals)+len("]") > maxDocumentBytes {
			e.vals = e.vals[:mark]
			break
		}
	}
	if k == 0 {
		e.defs, e.vals = e.defs[:defsMark], e.vals[:valsMark]
		return 0
	}
	e.vals = append(e.vals, ']')
	return k
}

// header encodes the parts of every document that do not depend on the
// metrics into e.head.
func (e *encoder) header(ns string, ts int64, dims []dim, props []property) {
	b := append(e.head[:0], `{"_aws":{"Timestamp":`...)
	b = strconv.AppendInt(b, ts, 10)
	b = append(b, `,"CloudWatchMetrics":[{"Namespace":`...)
	b = appendString(b, ns)
	b = append(b, `,"Dimensions":[[`...)
	for i, d := range dims {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, d.key)
	}
	b = append(b, `]],"Metrics":[`...)
	e.mid = len(b)
	b = append(b, `]}]}`...)
	for _, d := range dims {
		b = append(b, ',')
		b = appendString(b, d.key)
		b = append(b, ':')
		b = appendString(b, d.value)
	}
	for _, p := range props {
		b = append(b, ',')
		b = appendString(b, p.key)
		b = append(b, ':')
		b = append(b, p.raw...)
	}
	e.head = b
}

// flushDoc assembles the document and writes it with one Write call.
func (e *encoder) flushDoc(w io.Writer) error {
	b := append(e.out[:0], e.head[:e.mid]...)
	b = append(b, e.defs...)
	b = append(b, e.head[e.mid:]...)
	b = append(b, e.vals...)
	b = append(b, docTail...)
	e.out = b
	_, err := w.Write(b)
	return err
}
