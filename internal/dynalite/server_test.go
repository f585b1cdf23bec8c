package dynalite_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/herdlock/herdlock/internal/dynalite"
)

func TestStartAnswersAndCloseStops(t *testing.T) {
	s, err := dynalite.Start(context.Background())
	if err != nil {
		t.Fatalf("Start() = %v", err)
	}
	if !strings.HasPrefix(s.Endpoint(), "http://127.0.0.1:") {
		t.Errorf("Endpoint() = %q, want a 127.0.0.1 URL", s.Endpoint())
	}
	client := dynalite.NewClient(s.Endpoint())
	if _, err := client.ListTables(t.Context(), &dynamodb.ListTablesInput{}); err != nil {
		t.Fatalf("ListTables() = %v", err)
	}
	pid := s.PID()
	if err := s.Close(); err != nil {
		t.Fatalf("Close() = %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close() = %v", err)
	}
	// Close has waited for the process, so its pid is gone (or reused by an
	// unrelated process, which is too unlikely to matter here).
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("kill(%d, 0) after Close = %v, want ESRCH", pid, err)
	}
	if _, err := client.ListTables(t.Context(), &dynamodb.ListTablesInput{}); err == nil {
		t.Errorf("ListTables() after Close = nil error, want a connection error")
	}
}

func TestStartWithoutPackagesNamesInstallCommand(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "launch.js"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv(dynalite.DirEnv, dir)
	_, err := dynalite.Start(context.Background())
	if err == nil || !strings.Contains(err.Error(), "make deps") {
		t.Fatalf("Start() = %v, want an error naming make deps", err)
	}
}

func TestStartWithoutNodeNamesInstallCommand(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := dynalite.Start(context.Background())
	if err == nil || !strings.Contains(err.Error(), "node not found") || !strings.Contains(err.Error(), "make deps") {
		t.Fatalf("Start() = %v, want an error naming node and make deps", err)
	}
}

func TestDirFindsLauncher(t *testing.T) {
	d, err := dynalite.Dir()
	if err != nil {
		t.Fatalf("Dir() = %v", err)
	}
	if _, err := os.Stat(filepath.Join(d, "launch.js")); err != nil {
		t.Errorf("Dir() = %q without launch.js: %v", d, err)
	}
}
