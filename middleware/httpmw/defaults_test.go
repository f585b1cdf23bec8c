package httpmw

import (
	"os"
	"testing"

	"github.com/herdlock/herdlock/internal/docstest"
)

// TestDocumentedDefaults: docs/configuration.md and the README's defaults
// box state the defaults that the code keeps unexported.
func TestDocumentedDefaults(t *testing.T) {
	for _, name := range []string{"docs/configuration.md", "README.md"} {
		md, err := os.ReadFile("../../" + name)
		if err != nil {
			t.Fatal(err)
		}
		for _, err := range docstest.Check(string(md), map[string][]any{
			"httpmw.WithIntegrationTimeout": {defaultIntegrationTimeout},
		}, []string{"httpmw.WithIntegrationTimeout"}) {
			t.Errorf("%s: %v", name, err)
		}
	}
}
