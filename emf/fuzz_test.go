package emf

import (
	"errors"
	"math"
	"strings"
	"testing"
)

// The fuzz targets check that every input either is refused with an error
// when it is added, or comes out of Flush as documents that pass the
// validator and decode back to what was added. The seed corpus is in
// testdata/fuzz; `go test` runs it as ordinary tests.

func FuzzAdd(f *testing.F) {
	f.Add("Latency", "Milliseconds", 12.5, uint8(1))
	f.Add("", "Count", 1.0, uint8(1))
	f.Add("a\"b\\c\u2028", "Bytes/Second", math.Copysign(0, -1), uint8(150)) // negative zero
	f.Add("_aws", "None", 1e300, uint8(3))
	f.Add("service", "Count", 1.0, uint8(1))
	f.Fuzz(func(t *testing.T, name, unit string, v float64, n uint8) {
		m, buf := newTest(t)
		u := Unit(unit)
		if !specUnits[unit] {
			if err := m.Add("X", u, 1); !errors.Is(err, ErrInvalid) {
				t.Fatalf("Add with unit %q = %v, want ErrInvalid", unit, err)
			}
			u = Count
		}
		count := int(n)%250 + 1
		err := m.Add(name, u, v)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("Add(%q, %q, %v) = %v, want ErrInvalid", name, u, v, err)
			}
			if docs := flushDocs(t, m, buf); len(docs) != 0 {
				t.Fatalf("refused Add wrote %d documents", len(docs))
			}
			return
		}
		for range count - 1 {
			mustNil(t, m.Add(name, u, v))
		}
		docs := flushDocs(t, m, buf)
		got := allValues(docs)[name]
		if len(got) != count {
			t.Fatalf("%d values back, want %d", len(got), count)
		}
		for _, x := range got {
			if x != v || math.Signbit(x) != math.Signbit(v) {
				t.Fatalf("value %v back, want %v", x, v)
			}
		}
	})
}

func FuzzDimensions(f *testing.F) {
	f.Add("tenant", "t1", "region", "eu-west-1", "Orders", uint8(2))
	f.Add("", "", ":k", " ", "m", uint8(0))
	f.Add("k", "v\x00", "service", "x", "k", uint8(40))
	f.Fuzz(func(t *testing.T, k1, v1, k2, v2, metric string, extra uint8) {
		m, buf := newTest(t, WithDefaultDimensions(map[string]string{"env": "prod"}))
		if err := m.Add(metric, Count, 1); err != nil {
			metric = "M"
			mustNil(t, m.Add(metric, Count, 1))
		}
		want := map[string]string{"service": "svc", "env": "prod"}
		add := func(k, v string) {
			err := m.AddDimension(k, v)
			if err == nil {
				want[k] = v
				return
			}
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("AddDimension(%q, %q) = %v", k, v, err)
			}
		}
		add(k1, v1)
		add(k2, v2)
		for i := range int(extra) % 40 {
			add(key("x", i), v1)
		}
		docs := flushDocs(t, m, buf)
		if len(docs) != 1 {
			t.Fatalf("%d documents, want 1", len(docs))
		}
		if len(docs[0].Dimensions) != len(want) {
			t.Fatalf("dimensions = %v, want %v", docs[0].Dimensions, want)
		}
		for k, v := range want {
			if docs[0].Dimensions[k] != v {
				t.Fatalf("dimension %q = %q, want %q", k, docs[0].Dimensions[k], v)
			}
		}
	})
}

func FuzzProperty(f *testing.F) {
	f.Add("request_id", "abc", 1.5)
	f.Add("", "\x00", math.Inf(1))
	f.Add("_aws", "\u2028\"", -1e-300)
	f.Fuzz(func(t *testing.T, key, s string, num float64) {
		m, buf := newTest(t)
		mustNil(t, m.Add("M", Count, 1))
		for _, v := range []any{s, num, map[string]any{key: s}} {
			err := m.SetProperty(key, v)
			if err != nil && !errors.Is(err, ErrInvalid) {
				t.Fatalf("SetProperty(%q, %v) = %v", key, v, err)
			}
		}
		docs := flushDocs(t, m, buf)
		if got := allValues(docs)["M"]; len(got) != 1 {
			t.Fatalf("metric M = %v, want one value", got)
		}
	})
}

func FuzzSplit(f *testing.F) {
	f.Add(uint16(101), uint16(1), uint16(0), uint32(1))
	f.Add(uint16(1), uint16(250), uint16(0), uint32(7))
	f.Fuzz(func(t *testing.T, metrics, values, propKB uint16, seed uint32) {
		nm, nv := int(metrics)%300+1, int(values)%300+1
		if nm*nv > 20_000 {
			nv = 20_000 / nm
		}
		m, buf := newTest(t)
		mustNil(t, m.SetProperty("blob", strings.Repeat("x", int(propKB)%900*1000)))
		want := map[string][]float64{}
		x := float64(seed)
		for i := range nm * nv {
			name := key("M", i%nm)
			x = math.Mod(x*6364136223846793005+1442695040888963407, 1e15) / 7
			mustNil(t, m.Add(name, None, x))
			want[name] = append(want[name], x)
		}
		docs := flushDocs(t, m, buf)
		got := allValues(docs)
		for name, vals := range want {
			g := got[name]
			if len(g) != len(vals) {
				t.Fatalf("metric %s: %d values back, want %d", name, len(g), len(vals))
			}
			for i := range vals {
				if g[i] != vals[i] {
					t.Fatalf("metric %s value %d = %v, want %v", name, i, g[i], vals[i])
				}
			}
		}
	})
}
