package idempotency

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/herdlock/herdlock/internal/docstest"
)

// TestDocumentedDefaults: docs/configuration.md states the defaults, the
// bounds and the header names that the code keeps unexported.
func TestDocumentedDefaults(t *testing.T) {
	raw, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	md := string(raw)
	for _, err := range docstest.Check(md, map[string][]any{
		"idempotency.WithRetention": {defaultExpiresAfter, time.Duration(0)},
		"idempotency.WithKeys":      {defaultKeyPrefix},
	}, []string{"idempotency.WithRetention", "idempotency.WithKeys"}) {
		t.Errorf("docs/configuration.md: %v", err)
	}
	for _, want := range []string{"`" + headerIdempotencyKey + "`", "`" + headerReplayed + ": true`",
		"at most `" + strconv.Itoa(maxKeyBytes) + "` bytes", "1 s to 30 days", "at most 1 h"} {
		if !strings.Contains(md, want) {
			t.Errorf("docs/configuration.md does not say %s", want)
		}
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range docstest.Check(string(readme), map[string][]any{"idempotency.WithRetention": {defaultExpiresAfter}}, []string{"idempotency.WithRetention"}) {
		t.Errorf("README.md: %v", err)
	}
	if maxExpiresAfter != 30*24*time.Hour || maxKeptErrors != time.Hour {
		t.Errorf("bounds %v and %v, documented 30 days and 1 h", maxExpiresAfter, maxKeptErrors)
	}
}
