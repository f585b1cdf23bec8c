package docstest

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// row is one documented option: its name, its documented default values
// and the line it is on.
type row struct {
	name   string
	values []string
	line   int
}

// codeSpan matches one inline code span.
var codeSpan = regexp.MustCompile("`([^`]+)`")

// rows returns the table rows of a Markdown text whose first cell starts
// with a code span, by option name. A name documented twice is an error:
// the two rows could disagree.
func rows(md string) (map[string]row, error) {
	out := map[string]row{}
	for i, l := range strings.Split(md, "\n") {
		l = strings.TrimSpace(l)
		if !strings.HasPrefix(l, "|") {
			continue
		}
		cells := strings.Split(strings.Trim(l, "|"), "|")
		if len(cells) < 2 {
			continue
		}
		name := firstSpan(cells[0])
		if name == "" || !strings.HasPrefix(strings.TrimSpace(cells[0]), "`") {
			continue
		}
		r := row{name: name, line: i + 1, values: defaultValues(cells[1])}
		if prev, ok := out[name]; ok {
			return nil, fmt.Errorf("line %d: %s is documented again (first on line %d)", r.line, name, prev.line)
		}
		out[name] = r
	}
	return out, nil
}

// firstSpan is the text of the first code span of cell, or "".
func firstSpan(cell string) string {
	m := codeSpan.FindStringSubmatch(cell)
	if m == nil {
		return ""
	}
	return m[1]
}

// defaultValues are the leading code spans of a default cell that are
// separated only by commas: "`5`, `2s` (...)" gives 5 and 2s.
func defaultValues(cell string) []string {
	cell = strings.TrimSpace(cell)
	var vals []string
	for {
		loc := codeSpan.FindStringSubmatchIndex(cell)
		if loc == nil || strings.Trim(cell[:loc[0]], ", ") != "" {
			return vals
		}
		vals = append(vals, cell[loc[2]:loc[3]])
		cell = cell[loc[1]:]
	}
}

// same reports whether the documented value doc states the code's value
// want, and if not, how the two read.
func same(doc string, want any) (bool, string) {
	switch w := want.(type) {
	case time.Duration:
		d, err := time.ParseDuration(doc)
		if err != nil {
			return false, fmt.Sprintf("%q is not a duration (the code has %v)", doc, w)
		}
		return d == w, fmt.Sprintf("documented %v, the code has %v", d, w)
	case int:
		n, err := size(doc)
		if err != nil {
			return false, fmt.Sprintf("%q is not a number (the code has %d)", doc, w)
		}
		return n == w, fmt.Sprintf("documented %d, the code has %d", n, w)
	case float64:
		f, err := strconv.ParseFloat(doc, 64)
		if err != nil {
			return false, fmt.Sprintf("%q is not a number (the code has %v)", doc, w)
		}
		return f == w, fmt.Sprintf("documented %v, the code has %v", f, w)
	case string:
		return doc == w, fmt.Sprintf("documented %q, the code has %q", doc, w)
	}
	return false, fmt.Sprintf("no comparison for a %T", want)
}

// size reads an integer, or a size with the suffix KiB.
func size(s string) (int, error) {
	if n, ok := strings.CutSuffix(s, "KiB"); ok {
		k, err := strconv.Atoi(strings.TrimSpace(n))
		return k << 10, err
	}
	return strconv.Atoi(s)
}

// Check is check, for the packages whose defaults are unexported: their
// own tests compare the rows of md that name their options with the
// values they keep.
func Check(md string, want map[string][]any, required []string) []error {
	return check(md, want, required)
}

// check compares the documented rows with the code's defaults: each name
// in want that md documents must state want's values; each name in
// required must be documented. It returns every difference.
func check(md string, want map[string][]any, required []string) []error {
	rs, err := rows(md)
	if err != nil {
		return []error{err}
	}
	var errs []error
	for _, name := range required {
		if _, ok := rs[name]; !ok {
			errs = append(errs, fmt.Errorf("%s: no row documents its default", name))
		}
	}
	for name, vals := range want {
		r, ok := rs[name]
		if !ok {
			continue
		}
		if len(r.values) < len(vals) {
			errs = append(errs, fmt.Errorf("line %d: %s: %d default value(s) in backticks, the code has %d (%v)", r.line, name, len(r.values), len(vals), vals))
			continue
		}
		for i, v := range vals {
			if ok, how := same(r.values[i], v); !ok {
				errs = append(errs, fmt.Errorf("line %d: %s: %s", r.line, name, how))
			}
		}
	}
	return errs
}
