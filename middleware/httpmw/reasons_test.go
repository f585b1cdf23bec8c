package httpmw

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestDocumentedReasons: the table of docs/fronts.md, section "Failure
// reasons of the error answers", lists exactly the reasons the error
// answers carry of httpmw's own, which the code keeps unexported.
func TestDocumentedReasons(t *testing.T) {
	raw, err := os.ReadFile("../../docs/fronts.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(raw), "### Failure reasons of the error answers\n")
	if !ok {
		t.Fatal(`docs/fronts.md has no section "Failure reasons of the error answers"`)
	}
	section, _, _ = strings.Cut(section, "\n#")
	var documented []string
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\|").FindAllStringSubmatch(section, -1) {
		documented = append(documented, m[1])
	}
	code := []string{reasonBadRequest, reasonKeyTooLong, reasonConfig, reasonNoAnswer, reasonLockFailed,
		reasonNoTimeLeft, reasonHandlerFail, reasonInternal}
	slices.Sort(documented)
	slices.Sort(code)
	if !slices.Equal(documented, code) {
		t.Errorf("documented reasons %q, the code's %q", documented, code)
	}
}
