package emf

import (
	"math"
	"strconv"
	"unicode/utf8"
)

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string. s must be valid UTF-8 (every
// name is checked when it is added); quotes, backslashes and control
// characters are escaped, and so are U+2028 and U+2029 so that the line is
// also valid JavaScript.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if !special[c] {
			i++
			continue
		}
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == '\u2028' || r == '\u2029' {
				b = append(b, s[start:i]...)
				b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
				start = i + size
			}
			i += size
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		default:
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		}
		i++
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// special marks the bytes appendString must look at: those it escapes and
// the non-ASCII ones, which may start U+2028 or U+2029.
var special = func() (t [256]bool) {
	for c := range 256 {
		t[c] = c < ' ' || c == '"' || c == '\\' || c >= utf8.RuneSelf
	}
	return t
}()

// appendFloat appends a finite v as a JSON number, in the shortest form that
// reads back as exactly v: plain digits between 1e-6 and 1e21, an exponent
// outside.
func appendFloat(b []byte, v float64) []byte {
	if i := int64(v); float64(i) == v && i > -1e15 && i < 1e15 && (i != 0 || !math.Signbit(v)) {
		return strconv.AppendInt(b, i, 10) // whole numbers, the common case
	}
	format := byte('f')
	if a := math.Abs(v); a != 0 && (a < 1e-6 || a >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, v, format, -1, 64)
	if format == 'e' {
		// Shorten e-07 to e-7.
		n := len(b)
		if n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}
