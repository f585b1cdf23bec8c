package lockmw

import (
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/herdlock/herdlock/internal/docstest"
)

// readDoc reads a file of the repository's root.
func readDoc(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// docTable returns the rows of the tables in the section of md under the
// heading (up to the next heading): the text of each cell, the code span
// of the first cell unquoted. Rows whose first cell is no code span (the
// header) are left out.
func docTable(t *testing.T, md, heading string) map[string][]string {
	t.Helper()
	_, section, ok := strings.Cut(md, "\n"+heading+"\n")
	if !ok {
		t.Fatalf("no section %q", heading)
	}
	rows := map[string][]string{}
	for line := range strings.SplitSeq(section, "\n") {
		if strings.HasPrefix(line, "#") {
			break
		}
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "| "), " | ")
		name, _, _ := strings.Cut(strings.TrimPrefix(cells[0], "`"), "`")
		if _, dup := rows[name]; dup {
			t.Errorf("%s: %s is listed twice", heading, name)
		}
		rows[name] = cells
	}
	return rows
}

// sameNames fails t unless the documented names are the code's.
func sameNames(t *testing.T, where string, documented map[string][]string, code []string) {
	t.Helper()
	doc := slices.Sorted(maps.Keys(documented))
	slices.Sort(code)
	if !slices.Equal(doc, code) {
		t.Errorf("%s lists %q; the code has %q", where, doc, code)
	}
}

// The names lockmw writes, which are documentation rather than API (the
// span and attribute names, the metric names, the log levels, the
// outcome and the reasons), are listed in the docs exactly as the code
// has them.
func TestDocumentedNamesAreTheCodes(t *testing.T) {
	tracing := readDoc(t, "docs/tracing.md")
	sameNames(t, "docs/tracing.md, Span and attribute names", docTable(t, tracing, "## Span and attribute names"), []string{
		spanInvocation, spanAcquire, spanWait, spanRelease,
		attrLockGroup, attrLockID, attrOutcome, attrFence, attrTakeover, attrAfterFail, attrPolls, attrResult, attrCoalesced,
		attrInvocationID, attrResourceID, attrAccountID,
	})

	ops := readDoc(t, "docs/operations.md")
	sameNames(t, "docs/operations.md, Metrics", docTable(t, ops, "### Metrics"), []string{
		metricNotTried, metricLockCoalesced, metricLockCoalescedFallThrough, metricLockCoalescedWait,
		metricAnswerBytes, metricAnswerNotInline,
	})
	sameNames(t, "docs/operations.md, Outcomes and reasons", docTable(t, ops, "### Outcomes and reasons"), []string{
		outcomeNotTried, reasonHandlerError, reasonHandlerPanic,
	})

	levels := docTable(t, ops, "### Log levels")
	code := map[string]int{"TRACE": int(levelTrace), "FATAL": int(levelFatal)}
	sameNames(t, "docs/operations.md, Log levels", levels, slices.Collect(maps.Keys(code)))
	for name, cells := range levels {
		want, ok := code[name]
		if !ok || len(cells) < 2 {
			continue
		}
		if got, err := strconv.Atoi(strings.Trim(cells[1], "`")); err != nil || got != want {
			t.Errorf("docs/operations.md: level %s is documented as %s; the code has %d", name, cells[1], want)
		}
	}
	// The default logger writes them by these names, and reads them from
	// Lambda's log level.
	for name, level := range map[string]slog.Level{"TRACE": levelTrace, "FATAL": levelFatal} {
		if got := lambdaLevelNames(nil, slog.Any(slog.LevelKey, level)).Value.String(); got != name {
			t.Errorf("the default logger writes level %d as %q, want %q", level, got, name)
		}
		if got := lambdaLevel(name); got != level {
			t.Errorf("AWS_LAMBDA_LOG_LEVEL=%s reads as %d, want %d", name, got, level)
		}
	}
}

// The documented defaults held in unexported constants are the code's:
// docs/configuration.md's rows and the README's defaults box.
func TestDocumentedDefaultsAreTheCodes(t *testing.T) {
	want := map[string][]any{
		"lockmw.WithLockGroup":          {defaultLockGroup},
		"lockmw.Telemetry.EMF":          {defaultNamespace},
		"lockmw.Answers.MaxInlineBytes": {defaultMaxAnswerBytes},
		"lockmw.Holder.AppID":           {1},
	}
	required := slices.Collect(maps.Keys(want))
	for _, err := range docstest.Check(readDoc(t, "docs/configuration.md"), want, required) {
		t.Errorf("docs/configuration.md: %v", err)
	}
	for _, err := range docstest.Check(readDoc(t, "README.md"), want, []string{"lockmw.WithLockGroup", "lockmw.Answers.MaxInlineBytes"}) {
		t.Errorf("README.md: %v", err)
	}
	// Outside Lambda the record account is account 1, as documented.
	rows := docTable(t, readDoc(t, "docs/configuration.md"), "## lockmw: the Lambda middleware")
	if cells := rows["lockmw.Holder.AccountID"]; len(cells) < 2 || !strings.Contains(cells[1], "`"+strconv.Itoa(localAccountID)+"` outside Lambda") {
		t.Errorf("docs/configuration.md: lockmw.Holder.AccountID's default %q does not say account %d outside Lambda", cells, localAccountID)
	}
}
