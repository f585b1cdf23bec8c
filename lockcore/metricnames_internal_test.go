package lockcore

import (
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// metricConsts returns the metric names metrics.go declares (the values of
// its constants named metric…), with their units from the line comments.
func metricConsts(t *testing.T) map[string]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "metrics.go", nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, s := range gd.Specs {
			vs := s.(*ast.ValueSpec)
			if len(vs.Names) != 1 || !strings.HasPrefix(vs.Names[0].Name, "metric") || len(vs.Values) != 1 {
				continue
			}
			lit, ok := vs.Values[0].(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				t.Fatalf("%s is not a string literal", vs.Names[0].Name)
			}
			name, err := strconv.Unquote(lit.Value)
			if err != nil {
				t.Fatal(err)
			}
			unit, _, _ := strings.Cut(strings.TrimSpace(vs.Comment.Text()), ":")
			out[name] = unit
		}
	}
	return out
}

// metricRow matches a row of the metrics table: the name and the unit.
var metricRow = regexp.MustCompile("^\\| `([A-Za-z]+)` \\| (Count|Milliseconds) \\|")

// documentedMetrics returns the metrics table of the section "The lock's
// metrics" of md, name to unit.
func documentedMetrics(md string) map[string]string {
	_, sec, _ := strings.Cut(md, "## The lock's metrics\n")
	sec, _, _ = strings.Cut(sec, "\n## ")
	out := map[string]string{}
	for _, l := range strings.Split(sec, "\n") {
		if m := metricRow.FindStringSubmatch(l); m != nil {
			out[m[1]] = m[2]
		}
	}
	return out
}

// The metric names are unexported constants; docs/operations.md lists them
// for users. Every name the lock emits is documented with its unit, and
// every documented name is one the lock emits.
func TestMetricNamesAreDocumented(t *testing.T) {
	code := metricConsts(t)
	if len(code) < 20 {
		t.Fatalf("found only %d metric constants in metrics.go; were they renamed?", len(code))
	}
	b, err := os.ReadFile("../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	docs := documentedMetrics(string(b))
	for _, name := range slices.Sorted(maps.Keys(code)) {
		if unit, ok := docs[name]; !ok {
			t.Errorf("metric %s (%s) is not in docs/operations.md's table", name, code[name])
		} else if unit != code[name] {
			t.Errorf("metric %s: documented unit %s, the code's %s", name, unit, code[name])
		}
	}
	for _, name := range slices.Sorted(maps.Keys(docs)) {
		if _, ok := code[name]; !ok {
			t.Errorf("docs/operations.md lists metric %s, which the lock does not emit", name)
		}
	}
	// The reader is not kinder than the page: a dropped row is seen.
	md := strings.Replace(string(b), "| `LockTakeover` |", "| `LockTakeOver` |", 1)
	if _, ok := documentedMetrics(md)["LockTakeover"]; ok {
		t.Error("a renamed row still reads as LockTakeover")
	}
}
