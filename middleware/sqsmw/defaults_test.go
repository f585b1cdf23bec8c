package sqsmw

import (
	"os"
	"testing"

	"github.com/herdlock/herdlock/internal/docstest"
)

// TestDocumentedDefaults: docs/configuration.md states the defaults that
// the code keeps unexported.
func TestDocumentedDefaults(t *testing.T) {
	md, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range docstest.Check(string(md), map[string][]any{
		"sqsmw.WithBatchTime": {defaultConcurrency, defaultMinKeyTime, defaultBatchMargin},
	}) {
		t.Errorf("docs/configuration.md: %v", err)
	}
}
