// Package dynalitetest starts dynalite for tests.
package dynalitetest

import (
	"context"
	"testing"

	"github.com/herdlock/herdlock/internal/dynalite"
)

// Start launches a dynalite server for t and stops it in t.Cleanup. When
// Node.js or the npm packages are missing it fails the test with the
// command that installs them; it never skips.
func Start(t testing.TB) *dynalite.Server {
	t.Helper()
	s, err := dynalite.Start(context.Background())
	if err != nil {
		t.Fatalf("dynalite.Start() = %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("dynalite Close() = %v", err)
		}
	})
	return s
}
