// Package dynoxidetest starts Dynoxide for tests.
package dynoxidetest

import (
	"context"
	"testing"

	"github.com/herdlock/herdlock/internal/dynoxide"
)

// Start launches a Dynoxide server for t and stops it in t.Cleanup. When
// the pinned binary is missing it fails the test with the command that
// installs it; it never skips.
func Start(t testing.TB) *dynoxide.Server {
	t.Helper()
	s, err := dynoxide.Start(context.Background())
	if err != nil {
		t.Fatalf("dynoxide.Start() = %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("dynoxide Close() = %v", err)
		}
	})
	return s
}
