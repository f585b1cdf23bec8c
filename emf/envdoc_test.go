package emf

import (
	"os"
	"regexp"
	"slices"
	"testing"
)

// TestDocumentedEnvironment: the package documentation lists exactly the
// environment variables New reads, which the code keeps unexported.
func TestDocumentedEnvironment(t *testing.T) {
	raw, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	var documented []string
	for _, m := range regexp.MustCompile(`(?m)^//   - (POWERTOOLS_[A-Z_]+)`).FindAllStringSubmatch(string(raw), -1) {
		documented = append(documented, m[1])
	}
	code := []string{envNamespace, envService, envDisabled, envFunctionName, envDev}
	slices.Sort(documented)
	slices.Sort(code)
	if !slices.Equal(documented, code) {
		t.Errorf("documented %q, the code reads %q", documented, code)
	}
}
