package emf

import (
	"fmt"
	"math"
	"strings"
	"unicode"
	"unicode/utf8"
)

const awsKey = "_aws"

// quote returns s quoted for an error message, shortened past 64 bytes.
func quote(s string) string {
	if len(s) > 64 {
		n := 64
		for n > 60 && !utf8.RuneStart(s[n]) {
			n--
		}
		return fmt.Sprintf("%q...", s[:n])
	}
	return fmt.Sprintf("%q", s)
}

func checkNamespace(ns string) error {
	if !printableASCII(ns, maxNameLen) || strings.HasPrefix(ns, "AWS/") {
		return fmt.Errorf("%w namespace: %s", ErrInvalid, quote(ns))
	}
	return nil
}

// checkMetricName allows any UTF-8 text without control characters, as a
// CloudWatch metric name does, with at least one non-space character.
func checkMetricName(name string) error {
	if name == "" || name == awsKey || len(name) > 4*maxNameLen {
		return fmt.Errorf("%w metric name: %s", ErrInvalid, quote(name))
	}
	if asciiName(name) {
		return nil
	}
	if !utf8.ValidString(name) {
		return fmt.Errorf("%w metric name: %s", ErrInvalid, quote(name))
	}
	n, blank := 0, true
	for _, r := range name {
		n++
		if unicode.IsControl(r) {
			return fmt.Errorf("%w metric name: %s", ErrInvalid, quote(name))
		}
		if !unicode.IsSpace(r) {
			blank = false
		}
	}
	if n > maxNameLen || blank {
		return fmt.Errorf("%w metric name: %s", ErrInvalid, quote(name))
	}
	return nil
}

// asciiName reports whether name is a valid metric name in ASCII: at most
// 255 bytes, no control character, and not all spaces.
func asciiName(name string) bool {
	if len(name) > maxNameLen {
		return false
	}
	blank := true
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c < ' ' || c >= 0x7f {
			return false
		}
		if c != ' ' {
			blank = false
		}
	}
	return !blank
}

func checkDimension(key, value string) error {
	if !printableASCII(key, maxNameLen) || key[0] == ':' || key == awsKey {
		return fmt.Errorf("%w dimension: name %s", ErrInvalid, quote(key))
	}
	if !printableASCII(value, maxDimensionValueLen) {
		return fmt.Errorf("%w dimension: %s has value %s", ErrInvalid, key, quote(value))
	}
	return nil
}

func checkPropertyKey(key string) error {
	if key == "" || key == awsKey || !utf8.ValidString(key) {
		return fmt.Errorf("%w property: key %s", ErrInvalid, quote(key))
	}
	return nil
}

func checkValue(v float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) || math.Abs(v) > maxValue {
		return fmt.Errorf("%w metric value: %v", ErrInvalid, v)
	}
	return nil
}

// printableASCII reports whether s has 1 to max characters, all in ' '..'~',
// and at least one that is not a space.
func printableASCII(s string, max int) bool {
	if s == "" || len(s) > max {
		return false
	}
	blank := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < ' ' || c > '~' {
			return false
		}
		if c != ' ' {
			blank = false
		}
	}
	return !blank
}
