package capacity

import (
	"encoding/base64"
	"encoding/json"
	"math"
	"strings"
)

// attrValue is one DynamoDB attribute value in the JSON protocol.
type attrValue struct {
	S    *string              `json:"S,omitempty"`
	N    *string              `json:"N,omitempty"`
	B    *string              `json:"B,omitempty"`
	BOOL *bool                `json:"BOOL,omitempty"`
	NULL *bool                `json:"NULL,omitempty"`
	SS   []string             `json:"SS,omitempty"`
	NS   []string             `json:"NS,omitempty"`
	BS   []string             `json:"BS,omitempty"`
	L    []attrValue          `json:"L,omitempty"`
	M    map[string]attrValue `json:"M,omitempty"`
}

// itemSize returns the size DynamoDB bills for item: the UTF-8 length of
// each attribute name plus the size of its value.
func itemSize(item map[string]attrValue) int {
	n := 0
	for name, v := range item {
		n += len(name) + valueSize(v)
	}
	return n
}

func valueSize(v attrValue) int {
	switch {
	case v.S != nil:
		return len(*v.S)
	case v.N != nil:
		return numberSize(*v.N)
	case v.B != nil:
		return binarySize(*v.B)
	case v.BOOL != nil, v.NULL != nil:
		return 1
	case v.SS != nil:
		n := 0
		for _, s := range v.SS {
			n += len(s)
		}
		return n
	case v.NS != nil:
		n := 0
		for _, s := range v.NS {
			n += numberSize(s)
		}
		return n
	case v.BS != nil:
		n := 0
		for _, s := range v.BS {
			n += binarySize(s)
		}
		return n
	case v.L != nil:
		n := 3
		for _, e := range v.L {
			n += 1 + valueSize(e)
		}
		return n
	case v.M != nil:
		n := 3
		for k, e := range v.M {
			n += 1 + len(k) + valueSize(e)
		}
		return n
	}
	return 0
}

// numberSize is DynamoDB's size of a number: one byte per two significant
// digits, plus one.
func numberSize(s string) int {
	s = strings.TrimLeft(s, "+-")
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		s = s[:i]
	}
	s = strings.Replace(s, ".", "", 1)
	s = strings.Trim(s, "0")
	digits := max(1, len(s))
	return (digits+1)/2 + 1
}

func binarySize(b64 string) int {
	if b, err := base64.StdEncoding.DecodeString(b64); err == nil {
		return len(b)
	}
	return base64.StdEncoding.DecodedLen(len(b64))
}

// writeUnits is the WCU of a write touching items of the given sizes: one
// per started KB of the larger, at least one.
func writeUnits(sizes ...int) float64 {
	return units(maxOf(sizes), 1024)
}

// readUnits is the RCU of a GetItem of an item of size bytes: one per
// started 4 KB, at least one, half when eventually consistent.
func readUnits(size int, consistent bool) float64 {
	u := units(size, 4096)
	if !consistent {
		u /= 2
	}
	return u
}

func units(size, per int) float64 {
	return max(1, math.Ceil(float64(size)/float64(per)))
}

func maxOf(xs []int) int {
	m := 0
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}

// canonicalKey returns table and key in one comparable string: the table
// name, a NUL, and the key's JSON with attribute names sorted.
func canonicalKey(table string, key map[string]attrValue) string {
	b, _ := json.Marshal(key) // maps marshal with sorted keys
	return table + "\x00" + string(b)
}

// ItemKey returns the name [Proxy.Stats] uses for the item of table whose
// key is the string attribute attr with value v.
func ItemKey(table, attr, v string) string {
	return canonicalKey(table, map[string]attrValue{attr: {S: &v}})
}
