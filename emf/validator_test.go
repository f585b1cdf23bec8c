package emf

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"unicode"
	"unicode/utf8"
)

// This file is a validator of the embedded metric format specification,
// written apart from the encoder: every document the tests and fuzz targets
// see goes through validateOutput.

// specUnits are the units the specification allows.
var specUnits = map[string]bool{
	"Seconds": true, "Microseconds": true, "Milliseconds": true,
	"Bytes": true, "Kilobytes": true, "Megabytes": true, "Gigabytes": true, "Terabytes": true,
	"Bits": true, "Kilobits": true, "Megabits": true, "Gigabits": true, "Terabits": true,
	"Percent": true, "Count": true,
	"Bytes/Second": true, "Kilobytes/Second": true, "Megabytes/Second": true, "Gigabytes/Second": true, "Terabytes/Second": true,
	"Bits/Second": true, "Kilobits/Second": true, "Megabits/Second": true, "Gigabits/Second": true, "Terabits/Second": true,
	"Count/Second": true, "None": true,
}

// Limits, restated from the specification and the CloudWatch API.
const (
	specMaxDocBytes   = 1<<20 - 26
	specMaxMetrics    = 100
	specMaxValues     = 100
	specMaxDimensions = 30
)

// emfDoc is one validated document.
type emfDoc struct {
	Timestamp  int64
	Namespace  string
	DimSets    [][]string
	Defs       []emfDef
	Dimensions map[string]string          // dimension key -> value
	Values     map[string][]float64       // metric name -> values, in order
	Root       map[string]json.RawMessage // every root member
	Size       int                        // bytes, newline included
}

type emfDef struct {
	Name              string
	Unit              string
	StorageResolution int
}

// validateOutput splits out into lines and validates each as a document.
func validateOutput(out []byte) ([]emfDoc, error) {
	if len(out) == 0 {
		return nil, nil
	}
	if out[len(out)-1] != '\n' {
		return nil, errors.New("output does not end with a newline")
	}
	var docs []emfDoc
	for i, line := range bytes.SplitAfter(out[:len(out)-1], []byte("\n")) {
		line = bytes.TrimSuffix(line, []byte("\n"))
		d, err := validateDocument(line)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w\n%.2000s", i, err, line)
		}
		docs = append(docs, d)
	}
	return docs, nil
}

// validateDocument checks one document, without its newline, field by field.
func validateDocument(line []byte) (emfDoc, error) {
	d := emfDoc{Size: len(line) + 1, Dimensions: map[string]string{}, Values: map[string][]float64{}}
	if d.Size > specMaxDocBytes {
		return d, fmt.Errorf("size %d > %d", d.Size, specMaxDocBytes)
	}
	if bytes.ContainsAny(line, "\n\r") {
		return d, errors.New("document spans lines")
	}
	if !json.Valid(line) {
		return d, errors.New("invalid JSON")
	}
	if err := checkUniqueKeys(line); err != nil {
		return d, err
	}
	if err := strictUnmarshal(line, &d.Root); err != nil {
		return d, fmt.Errorf("root: %w", err)
	}

	// _aws: a metadata object with Timestamp and CloudWatchMetrics only.
	var aws map[string]json.RawMessage
	if err := strictUnmarshal(d.Root["_aws"], &aws); err != nil || aws == nil {
		return d, fmt.Errorf("_aws is not an object: %v", err)
	}
	if err := onlyKeys(aws, []string{"Timestamp", "CloudWatchMetrics"}, nil); err != nil {
		return d, fmt.Errorf("_aws: %w", err)
	}
	var ts json.Number
	if err := strictUnmarshal(aws["Timestamp"], &ts); err != nil {
		return d, fmt.Errorf("Timestamp: %w", err)
	}
	t, err := ts.Int64()
	if err != nil || t < 0 {
		return d, fmt.Errorf("Timestamp %s is not epoch milliseconds", ts)
	}
	d.Timestamp = t

	var directives []map[string]json.RawMessage
	if err := strictUnmarshal(aws["CloudWatchMetrics"], &directives); err != nil {
		return d, fmt.Errorf("CloudWatchMetrics: %w", err)
	}
	if len(directives) != 1 {
		return d, fmt.Errorf("%d metric directives, want 1", len(directives))
	}
	dir := directives[0]
	if err := onlyKeys(dir, []string{"Namespace", "Dimensions", "Metrics"}, nil); err != nil {
		return d, fmt.Errorf("directive: %w", err)
	}
	if err := strictUnmarshal(dir["Namespace"], &d.Namespace); err != nil {
		return d, fmt.Errorf("Namespace: %w", err)
	}
	if !specASCII(d.Namespace, 255) || strings.HasPrefix(d.Namespace, "AWS/") {
		return d, fmt.Errorf("Namespace %q invalid", d.Namespace)
	}

	// Dimensions: one or more sets of at most 30 keys, each a root member
	// with a valid string value.
	if err := strictUnmarshal(dir["Dimensions"], &d.DimSets); err != nil {
		return d, fmt.Errorf("Dimensions: %w", err)
	}
	if len(d.DimSets) == 0 {
		return d, errors.New("no dimension set")
	}
	for _, set := range d.DimSets {
		if len(set) > specMaxDimensions {
			return d, fmt.Errorf("dimension set of %d keys", len(set))
		}
		seen := map[string]bool{}
		for _, k := range set {
			if seen[k] {
				return d, fmt.Errorf("dimension %q twice in a set", k)
			}
			seen[k] = true
			if !specASCII(k, 255) || k[0] == ':' || k == "_aws" {
				return d, fmt.Errorf("dimension name %q invalid", k)
			}
			var v string
			if err := strictUnmarshal(d.Root[k], &v); err != nil {
				return d, fmt.Errorf("dimension %q target is not a string: %w", k, err)
			}
			if !specASCII(v, 1024) {
				return d, fmt.Errorf("dimension %q value %q invalid", k, v)
			}
			d.Dimensions[k] = v
		}
	}

	// Metrics: 1 to 100 definitions, each naming a numeric root member.
	var defs []map[string]json.RawMessage
	if err := strictUnmarshal(dir["Metrics"], &defs); err != nil {
		return d, fmt.Errorf("Metrics: %w", err)
	}
	if len(defs) == 0 || len(defs) > specMaxMetrics {
		return d, fmt.Errorf("%d metric definitions", len(defs))
	}
	for _, raw := range defs {
		if err := onlyKeys(raw, []string{"Name"}, []string{"Unit", "StorageResolution"}); err != nil {
			return d, fmt.Errorf("metric definition: %w", err)
		}
		def := emfDef{Unit: "None", StorageResolution: 60}
		if err := strictUnmarshal(raw["Name"], &def.Name); err != nil {
			return d, fmt.Errorf("metric Name: %w", err)
		}
		if !specMetricName(def.Name) {
			return d, fmt.Errorf("metric name %q invalid", def.Name)
		}
		if u, ok := raw["Unit"]; ok {
			if err := strictUnmarshal(u, &def.Unit); err != nil || !specUnits[def.Unit] {
				return d, fmt.Errorf("metric %q unit %s invalid", def.Name, u)
			}
		}
		if r, ok := raw["StorageResolution"]; ok {
			if err := strictUnmarshal(r, &def.StorageResolution); err != nil ||
				(def.StorageResolution != 1 && def.StorageResolution != 60) {
				return d, fmt.Errorf("metric %q StorageResolution %s invalid", def.Name, r)
			}
		}
		if _, dup := d.Values[def.Name]; dup {
			return d, fmt.Errorf("metric %q defined twice", def.Name)
		}
		if _, isDim := d.Dimensions[def.Name]; isDim {
			return d, fmt.Errorf("metric %q is also a dimension", def.Name)
		}
		vals, err := metricValues(d.Root[def.Name])
		if err != nil {
			return d, fmt.Errorf("metric %q: %w", def.Name, err)
		}
		d.Values[def.Name] = vals
		d.Defs = append(d.Defs, def)
	}
	return d, nil
}

// metricValues reads a metric target: a number or an array of 1 to 100
// numbers, each finite and within ±2^360.
func metricValues(raw json.RawMessage) ([]float64, error) {
	if raw == nil {
		return nil, errors.New("no target member")
	}
	var elems []json.RawMessage
	if bytes.HasPrefix(raw, []byte("[")) {
		if err := strictUnmarshal(raw, &elems); err != nil {
			return nil, err
		}
		if len(elems) == 0 || len(elems) > specMaxValues {
			return nil, fmt.Errorf("%d values", len(elems))
		}
	} else {
		elems = []json.RawMessage{raw}
	}
	nums := make([]json.Number, len(elems))
	for i, e := range elems {
		if len(e) == 0 || (e[0] != '-' && (e[0] < '0' || e[0] > '9')) {
			return nil, fmt.Errorf("value %s is not a number", e)
		}
		if err := strictUnmarshal(e, &nums[i]); err != nil {
			return nil, err
		}
	}
	vals := make([]float64, len(nums))
	for i, n := range nums {
		v, err := n.Float64()
		if err != nil || math.IsInf(v, 0) || math.IsNaN(v) || math.Abs(v) > math.Ldexp(1, 360) {
			return nil, fmt.Errorf("value %s out of range", n)
		}
		vals[i] = v
	}
	return vals, nil
}

// strictUnmarshal decodes with numbers kept as json.Number and fails on
// null, which no field of a document may be.
func strictUnmarshal(raw json.RawMessage, v any) error {
	if raw == nil {
		return errors.New("missing")
	}
	if bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return errors.New("null")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("trailing data")
	}
	return nil
}

// onlyKeys checks that obj has every required key and no key that is
// neither required nor optional.
func onlyKeys(obj map[string]json.RawMessage, required, optional []string) error {
	allowed := map[string]bool{}
	for _, k := range required {
		if _, ok := obj[k]; !ok {
			return fmt.Errorf("missing %s", k)
		}
		allowed[k] = true
	}
	for _, k := range optional {
		allowed[k] = true
	}
	for k := range obj {
		if !allowed[k] {
			return fmt.Errorf("unexpected member %q", k)
		}
	}
	return nil
}

// checkUniqueKeys fails if any object in the document repeats a key, which
// encoding/json would silently accept.
func checkUniqueKeys(doc []byte) error {
	type frame struct {
		object    bool
		keys      map[string]bool
		expectKey bool
	}
	dec := json.NewDecoder(bytes.NewReader(doc))
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			if top != nil && top.object {
				top.expectKey = true
			}
			stack = append(stack, &frame{object: tok == json.Delim('{'), keys: map[string]bool{}, expectKey: true})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
			continue
		}
		if top == nil || !top.object {
			continue
		}
		if top.expectKey {
			k := tok.(string)
			if top.keys[k] {
				return fmt.Errorf("duplicate key %q", k)
			}
			top.keys[k] = true
			top.expectKey = false
		} else {
			top.expectKey = true
		}
	}
}

// specASCII: 1 to max printable ASCII characters, not all spaces.
func specASCII(s string, max int) bool {
	if len(s) == 0 || len(s) > max || strings.TrimSpace(s) == "" {
		return false
	}
	for _, r := range s {
		if r < 0x20 || r > 0x7e {
			return false
		}
	}
	return true
}

// specMetricName: 1 to 255 characters of UTF-8, no control characters,
// not all white space.
func specMetricName(s string) bool {
	if !utf8.ValidString(s) || utf8.RuneCountInString(s) > 255 || s == "_aws" {
		return false
	}
	if strings.TrimFunc(s, unicode.IsSpace) == "" {
		return false
	}
	return !strings.ContainsFunc(s, unicode.IsControl)
}

// sums returns, per metric name, all values across docs in order.
func allValues(docs []emfDoc) map[string][]float64 {
	all := map[string][]float64{}
	for _, d := range docs {
		for _, def := range d.Defs {
			all[def.Name] = append(all[def.Name], d.Values[def.Name]...)
		}
	}
	return all
}
