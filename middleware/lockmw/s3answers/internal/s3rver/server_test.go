package s3rver

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// Start serves the buckets it was given; Close stops the process, so the
// endpoint refuses connections, and removes the objects' folder.
func TestStartServesBucketsAndCloseStops(t *testing.T) {
	s, err := Start(t.Context(), "one", "two")
	if err != nil {
		t.Fatalf("Start() = %v", err)
	}
	if !strings.HasPrefix(s.Endpoint(), "http://127.0.0.1:") {
		t.Errorf("Endpoint() = %q, want a 127.0.0.1 URL", s.Endpoint())
	}
	client := NewClient(s.Endpoint())
	out, err := client.ListBuckets(t.Context(), &s3.ListBucketsInput{})
	if err != nil {
		t.Fatalf("ListBuckets() = %v", err)
	}
	var names []string
	for _, b := range out.Buckets {
		names = append(names, *b.Name)
	}
	if strings.Join(names, ",") != "one,two" {
		t.Errorf("buckets = %v, want one, two", names)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close() = %v", err)
	}
	if _, err := os.Stat(s.data); !os.IsNotExist(err) {
		t.Errorf("the objects' folder %s is still there: %v", s.data, err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	if _, err := client.ListBuckets(ctx, &s3.ListBucketsInput{}); err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("ListBuckets() after Close = %v; want connection refused", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close() = %v", err)
	}
}

// Without the npm packages, Start says how to install them.
func TestStartWithoutPackagesSaysHowToInstall(t *testing.T) {
	t.Setenv(DirEnv, t.TempDir())
	s, err := Start(t.Context())
	if err == nil {
		s.Close()
		t.Fatal("Start() = nil error in a folder without node_modules")
	}
	if !strings.Contains(err.Error(), "make deps") {
		t.Errorf("Start() = %v; want the install command", err)
	}
}
