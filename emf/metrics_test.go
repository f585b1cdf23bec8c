package emf

import (
	"bytes"
	"errors"
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// lockcore's metrics interface, restated: emf does not import lockcore.
var _ interface{ AddMetric(string, string, float64) } = (*Metrics)(nil)

func TestAddMetricInterface(t *testing.T) {
	m, buf := newTest(t)
	var sink interface{ AddMetric(string, string, float64) } = m
	sink.AddMetric("LockAcquisitionDuration", "Milliseconds", 12)
	sink.AddMetric("LockAcquisitionSuccess", "Count", 1)
	docs := flushDocs(t, m, buf)
	if len(docs) != 1 {
		t.Fatalf("Flush() wrote %d documents, want 1", len(docs))
	}
	want := []emfDef{
		{Name: "LockAcquisitionDuration", Unit: "Milliseconds", StorageResolution: 60},
		{Name: "LockAcquisitionSuccess", Unit: "Count", StorageResolution: 60},
	}
	if !reflect.DeepEqual(docs[0].Defs, want) {
		t.Errorf("definitions = %+v, want %+v", docs[0].Defs, want)
	}
}

func TestAddMetricRecordsErrors(t *testing.T) {
	m, buf := newTest(t)
	m.AddMetric("Good", "Count", 1)
	m.AddMetric("BadUnit", "Furlongs", 1)
	m.AddMetric("BadValue", "Count", math.NaN())
	err := m.Flush()
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), `"Furlongs"`) || !strings.Contains(err.Error(), "metric value") {
		t.Errorf("Flush() = %v, want ErrInvalid naming the unit and the value", err)
	}
	docs, verr := validateOutput(buf.Bytes())
	if verr != nil {
		t.Fatal(verr)
	}
	if got := allValues(docs); !reflect.DeepEqual(got, map[string][]float64{"Good": {1}}) {
		t.Errorf("values = %v, want only Good", got)
	}
	if err := m.Flush(); err != nil {
		t.Errorf("second Flush() = %v, want nil: errors are reported once", err)
	}
}

func TestAddMetricErrorCap(t *testing.T) {
	m, _ := newTest(t)
	for range maxErrors + 5 {
		m.AddMetric("", "Count", 1)
	}
	err := m.Flush()
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("Flush() = %v, want ErrInvalid", err)
	}
	if !strings.Contains(err.Error(), "5 more errors") {
		t.Errorf("Flush() = %v, want it to count the 5 errors not kept", err)
	}
}

func TestAddErrors(t *testing.T) {
	tests := []struct {
		name   string
		metric string
		unit   Unit
		value  float64
		want   error
	}{
		{"empty name", "", Count, 1, ErrInvalid},
		{"blank name", " \t", Count, 1, ErrInvalid},
		{"name 256 long", strings.Repeat("a", 256), Count, 1, ErrInvalid},
		{"control char", "a\x01b", Count, 1, ErrInvalid},
		{"newline", "a\nb", Count, 1, ErrInvalid},
		{"invalid utf8", "a\xffb", Count, 1, ErrInvalid},
		{"reserved _aws", "_aws", Count, 1, ErrInvalid},
		{"unknown unit", "m", Unit("Furlongs"), 1, ErrInvalid},
		{"empty unit", "m", Unit(""), 1, ErrInvalid},
		{"NaN", "m", Count, math.NaN(), ErrInvalid},
		{"+Inf", "m", Count, math.Inf(1), ErrInvalid},
		{"-Inf", "m", Count, math.Inf(-1), ErrInvalid},
		{"above 2^360", "m", Count, math.Ldexp(1.5, 360), ErrInvalid},
		{"below -2^360", "m", Count, -math.Ldexp(1.5, 360), ErrInvalid},
		{"same as default dimension", "env", Count, 1, ErrInvalid},
		{"same as service", "service", Count, 1, ErrInvalid},
		{"same as dimension", "tenant", Count, 1, ErrInvalid},
		{"same as property", "request_id", Count, 1, ErrInvalid},
		{"redefined unit", "Latency", Seconds, 1, ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, buf := newTest(t, WithDefaultDimensions(map[string]string{"env": "prod"}))
			mustNil(t, m.AddDimension("tenant", "t1"))
			mustNil(t, m.SetProperty("request_id", "r1"))
			mustNil(t, m.Add("Latency", Milliseconds, 1))
			if err := m.Add(tt.metric, tt.unit, tt.value); !errors.Is(err, tt.want) {
				t.Fatalf("Add(%q, %q, %v) = %v, want %v", tt.metric, tt.unit, tt.value, err, tt.want)
			}
			docs := flushDocs(t, m, buf)
			if got := allValues(docs); !reflect.DeepEqual(got, map[string][]float64{"Latency": {1}}) {
				t.Errorf("values = %v, want the rejected Add to leave nothing", got)
			}
		})
	}
}

func TestAddAccepts(t *testing.T) {
	tests := []struct {
		name   string
		metric string
		value  float64
	}{
		{"255 characters", strings.Repeat("é", 255), 1},
		{"quotes and backslash", `a"b\c`, 1},
		{"unicode line separator", "a\u2028b", 1},
		{"2^360", "max", math.Ldexp(1, 360)},
		{"-2^360", "min", -math.Ldexp(1, 360)},
		{"tiny", "tiny", 5e-324},
		{"negative zero", "nz", math.Copysign(0, -1)},
		{"big integer", "big", 1e21},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, buf := newTest(t)
			mustNil(t, m.Add(tt.metric, None, tt.value))
			docs := flushDocs(t, m, buf)
			got := allValues(docs)[tt.metric]
			if len(got) != 1 || got[0] != tt.value || math.Signbit(got[0]) != math.Signbit(tt.value) {
				t.Errorf("round trip of %v = %v", tt.value, got)
			}
		})
	}
}

func TestHighResolution(t *testing.T) {
	m, buf := newTest(t)
	mustNil(t, m.AddHighResolution("Fast", Milliseconds, 1))
	mustNil(t, m.Add("Slow", Milliseconds, 1))
	if err := m.Add("Fast", Milliseconds, 2); !errors.Is(err, ErrInvalid) {
		t.Errorf("Add() of a high-resolution metric = %v, want ErrInvalid", err)
	}
	docs := flushDocs(t, m, buf)
	want := []emfDef{
		{Name: "Fast", Unit: "Milliseconds", StorageResolution: 1},
		{Name: "Slow", Unit: "Milliseconds", StorageResolution: 60},
	}
	if !reflect.DeepEqual(docs[0].Defs, want) {
		t.Errorf("definitions = %+v, want %+v", docs[0].Defs, want)
	}
}

// TestEveryCloudWatchUnit: Add takes every unit of the specification,
// constant or not, and refuses any other string with an error that names
// it; the constants are distinct spec units.
func TestEveryCloudWatchUnit(t *testing.T) {
	for u := range specUnits {
		m, buf := newTest(t)
		if err := m.Add("X", Unit(u), 1); err != nil {
			t.Errorf("Add with unit %q = %v", u, err)
		}
		mustNil(t, m.Flush())
		if !strings.Contains(string(buf.Bytes()), `"Unit":"`+u+`"`) {
			t.Errorf("unit %q: document %s", u, string(buf.Bytes()))
		}
	}
	for _, s := range []string{"", "count", "Count ", "Bytes/second", "Furlongs"} {
		m, _ := newTest(t)
		if err := m.Add("X", Unit(s), 1); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), quote(s)) {
			t.Errorf("Add with unit %q = %v, want ErrInvalid naming it", s, err)
		}
	}
	consts := []Unit{Seconds, Milliseconds, Microseconds, Bytes, Kilobytes, Megabytes, Count, Percent, None,
		CountPerSecond, BytesPerSecond}
	seen := map[Unit]bool{}
	for _, u := range consts {
		if !specUnits[string(u)] || seen[u] {
			t.Errorf("constant %q is not a distinct spec unit", u)
		}
		seen[u] = true
	}
}

func TestAddDimension(t *testing.T) {
	tests := []struct {
		name  string
		key   string
		value string
	}{
		{"new key", "tenant", "t1"},
		{"overrides default", "env", "dev"},
		{"value 1024 long", "tenant", strings.Repeat("v", 1024)},
		{"key 255 long", strings.Repeat("k", 255), "v"},
		{"punctuation", "a-b.c/d#e", "x y:z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, buf := newTest(t, WithDefaultDimensions(map[string]string{"env": "prod"}))
			mustNil(t, m.Add("Latency", Milliseconds, 1))
			if err := m.AddDimension(tt.key, tt.value); err != nil {
				t.Fatalf("AddDimension(%q, %q) = %v, want nil", tt.key, tt.value, err)
			}
			docs := flushDocs(t, m, buf)
			if got := docs[0].Dimensions[tt.key]; got != tt.value {
				t.Errorf("dimension %q = %q, want %q", tt.key, got, tt.value)
			}
		})
	}
}

func TestAddDimensionErrors(t *testing.T) {
	tests := []struct {
		name  string
		key   string
		value string
		want  error
	}{
		{"empty value", "tenant", "", ErrInvalid},
		{"blank value", "tenant", "   ", ErrInvalid},
		{"value 1025 long", "tenant", strings.Repeat("v", 1025), ErrInvalid},
		{"non-ASCII value", "tenant", "café", ErrInvalid},
		{"control in value", "tenant", "a\tb", ErrInvalid},
		{"empty key", "", "v", ErrInvalid},
		{"key 256 long", strings.Repeat("k", 256), "v", ErrInvalid},
		{"key starts with colon", ":k", "v", ErrInvalid},
		{"key _aws", "_aws", "v", ErrInvalid},
		{"key is a metric", "Latency", "v", ErrInvalid},
		{"key is a property", "request_id", "v", ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, buf := newTest(t, WithDefaultDimensions(map[string]string{"env": "prod"}))
			mustNil(t, m.Add("Latency", Milliseconds, 1))
			mustNil(t, m.SetProperty("request_id", "r1"))
			if err := m.AddDimension(tt.key, tt.value); !errors.Is(err, tt.want) {
				t.Fatalf("AddDimension(%q, %q) = %v, want %v", tt.key, tt.value, err, tt.want)
			}
			docs := flushDocs(t, m, buf)
			if want := map[string]string{"service": "svc", "env": "prod"}; !reflect.DeepEqual(docs[0].Dimensions, want) {
				t.Errorf("dimensions = %v, want %v", docs[0].Dimensions, want)
			}
		})
	}
}

func TestDimensionLimit(t *testing.T) {
	defaults := map[string]string{}
	for i := range 28 {
		defaults[key("d", i)] = "v"
	}
	m, buf := newTest(t, WithDefaultDimensions(defaults)) // 29 with the service
	mustNil(t, m.AddDimension("extra", "v"))
	mustNil(t, m.AddDimension("extra", "w"))     // same key: still 30
	mustNil(t, m.AddDimension(key("d", 0), "w")) // overrides a default: still 30
	if err := m.AddDimension("one-too-many", "v"); !errors.Is(err, ErrInvalid) {
		t.Fatalf("AddDimension() of a 31st = %v, want ErrInvalid", err)
	}
	mustNil(t, m.Add("m", Count, 1))
	docs := flushDocs(t, m, buf)
	if got := len(docs[0].DimSets[0]); got != 30 {
		t.Errorf("dimension set has %d keys, want 30", got)
	}
	if docs[0].Dimensions[key("d", 0)] != "w" || docs[0].Dimensions["extra"] != "w" {
		t.Errorf("dimensions = %v, want overrides of the first default and extra and extra=w", docs[0].Dimensions)
	}
}

func TestSetProperty(t *testing.T) {
	tests := []struct {
		name string
		key  string
		v    any
		want string
	}{
		{"string", "request_id", "r1", `"r1"`},
		{"number", "attempt", 3, `3`},
		{"object", "ctx", map[string]any{"a": []int{1, 2}}, `{"a":[1,2]}`},
		{"nil", "none", nil, `null`},
		{"control chars in key", "a\x00\n", "x", `"x"`},
		{"quote in value", "q", `say "hi"`, `"say \"hi\""`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, buf := newTest(t)
			mustNil(t, m.Add("Latency", Milliseconds, 1))
			if err := m.SetProperty(tt.key, tt.v); err != nil {
				t.Fatalf("SetProperty(%q) = %v, want nil", tt.key, err)
			}
			docs := flushDocs(t, m, buf)
			if got := string(docs[0].Root[tt.key]); got != tt.want {
				t.Errorf("property %q = %s, want %s", tt.key, got, tt.want)
			}
		})
	}
}

func TestSetPropertyErrors(t *testing.T) {
	tests := []struct {
		name string
		key  string
		v    any
		want error
	}{
		{"empty key", "", "x", ErrInvalid},
		{"invalid utf8 key", "\xff", "x", ErrInvalid},
		{"_aws key", "_aws", "x", ErrInvalid},
		{"unmarshallable", "ch", make(chan int), ErrInvalid},
		{"NaN", "nan", math.NaN(), ErrInvalid},
		{"is a metric", "Latency", "x", ErrInvalid},
		{"is a default dimension", "service", "x", ErrInvalid},
		{"is a dimension", "tenant", "x", ErrInvalid},
		{"too large", "big", strings.Repeat("x", maxPropertyBytes), ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, buf := newTest(t)
			mustNil(t, m.Add("Latency", Milliseconds, 1))
			mustNil(t, m.AddDimension("tenant", "t1"))
			if err := m.SetProperty(tt.key, tt.v); !errors.Is(err, tt.want) {
				t.Fatalf("SetProperty(%q) = %v, want %v", tt.key, err, tt.want)
			}
			docs := flushDocs(t, m, buf)
			if got := len(docs[0].Root); got != 4 {
				t.Errorf("document has %d root members, want 4 (_aws, service, tenant, Latency)", got)
			}
		})
	}
}

func TestSetPropertyReplaces(t *testing.T) {
	m, buf := newTest(t)
	half := strings.Repeat("x", maxPropertyBytes/2)
	mustNil(t, m.SetProperty("p", half))
	mustNil(t, m.SetProperty("p", half)) // replacing does not count twice
	mustNil(t, m.SetProperty("p", "small"))
	mustNil(t, m.Add("m", Count, 1))
	docs := flushDocs(t, m, buf)
	if got := string(docs[0].Root["p"]); got != `"small"` {
		t.Errorf("property p = %s, want \"small\"", got)
	}
}

func TestFlushResets(t *testing.T) {
	m, buf := newTest(t, WithDefaultDimensions(map[string]string{"env": "prod"}))
	mustNil(t, m.AddDimension("tenant", "t1"))
	mustNil(t, m.AddDimension("env", "dev"))
	mustNil(t, m.SetProperty("request_id", "r1"))
	mustNil(t, m.Add("m", Count, 1))
	first := flushDocs(t, m, buf)
	if want := map[string]string{"service": "svc", "env": "dev", "tenant": "t1"}; !reflect.DeepEqual(first[0].Dimensions, want) {
		t.Errorf("first dimensions = %v, want %v", first[0].Dimensions, want)
	}

	// The metric name, the dimension and the property are free again.
	mustNil(t, m.Add("tenant", Count, 2))
	mustNil(t, m.SetProperty("m", "x"))
	second := flushDocs(t, m, buf)
	if want := map[string]string{"service": "svc", "env": "prod"}; !reflect.DeepEqual(second[0].Dimensions, want) {
		t.Errorf("second dimensions = %v, want %v", second[0].Dimensions, want)
	}
	if _, ok := second[0].Root["request_id"]; ok {
		t.Error("property request_id survived Flush")
	}
	if got := allValues(second); !reflect.DeepEqual(got, map[string][]float64{"tenant": {2}}) {
		t.Errorf("second values = %v", got)
	}
}

func TestFlushEmpty(t *testing.T) {
	tests := []struct {
		name string
		opts []Option
		want error
	}{
		{"default", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, buf := newTest(t, tt.opts...)
			mustNil(t, m.AddDimension("tenant", "t1"))
			mustNil(t, m.SetProperty("request_id", "r1"))
			if err := m.Flush(); !errors.Is(err, tt.want) {
				t.Errorf("Flush() = %v, want %v", err, tt.want)
			}
			if out := buf.Bytes(); len(out) != 0 {
				t.Errorf("Flush() wrote %q, want nothing", out)
			}
		})
	}
}

func TestDisabled(t *testing.T) {
	m, buf := newTest(t, withDisabled(true))
	mustNil(t, m.Add("m", Count, 1))
	m.AddMetric("m", "Furlongs", 1)
	if err := m.Flush(); !errors.Is(err, ErrInvalid) {
		t.Errorf("Flush() = %v, want the recorded ErrInvalid", err)
	}
	if out := buf.Bytes(); len(out) != 0 {
		t.Errorf("disabled Flush() wrote %q", out)
	}
}

type failWriter struct{ err error }

func (w failWriter) Write([]byte) (int, error) { return 0, w.err }

func TestWriteError(t *testing.T) {
	cause := errors.New("disk full")
	m, err := New(WithNamespace("Test"), WithWriter(failWriter{cause}), withDisabled(false))
	mustNil(t, err)
	mustNil(t, m.Add("m", Count, 1))
	if err := m.Flush(); !errors.Is(err, ErrWrite) || !errors.Is(err, cause) {
		t.Errorf("Flush() = %v, want ErrWrite wrapping %v", err, cause)
	}
}

func TestOneWritePerDocument(t *testing.T) {
	var w countingWriter
	m, err := New(WithNamespace("Test"), WithWriter(&w), withDisabled(false))
	mustNil(t, err)
	for i := range 250 {
		mustNil(t, m.Add(key("m", i), Count, 1))
	}
	mustNil(t, m.Flush())
	if w.writes != 3 {
		t.Errorf("%d writes, want 3", w.writes)
	}
	if _, err := validateOutput(w.buf.Bytes()); err != nil {
		t.Error(err)
	}
	for i, line := range bytes.Split(bytes.TrimSuffix(w.buf.Bytes(), []byte("\n")), []byte("\n")) {
		if len(line) == 0 {
			t.Errorf("line %d is empty", i)
		}
	}
}

type countingWriter struct {
	buf    bytes.Buffer
	writes int
}

func (w *countingWriter) Write(p []byte) (int, error) {
	w.writes++
	if p[len(p)-1] != '\n' {
		return 0, errors.New("write is not a whole line")
	}
	return w.buf.Write(p)
}

func mustNil(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("unexpected error: %v", err)
	}
}

func key(prefix string, i int) string {
	return prefix + strconv.Itoa(i)
}

func TestAppendFloat(t *testing.T) {
	tests := []struct {
		v    float64
		want string
	}{
		{0, "0"},
		{math.Copysign(0, -1), "-0"},
		{1, "1"},
		{-42, "-42"},
		{1.5, "1.5"},
		{999999999999999, "999999999999999"},
		{1e15, "1000000000000000"},
		{1e20, "100000000000000000000"},
		{1e21, "1e+21"},
		{1e-6, "0.000001"},
		{1e-7, "1e-7"},
		{5e-324, "5e-324"},
		{math.Ldexp(1, 360), "2.3485425827738332e+108"},
	}
	for _, tt := range tests {
		if got := string(appendFloat(nil, tt.v)); got != tt.want {
			t.Errorf("appendFloat(%v) = %s, want %s", tt.v, got, tt.want)
		}
	}
}
