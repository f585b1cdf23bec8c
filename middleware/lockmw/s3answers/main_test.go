package s3answers_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/herdlock/herdlock/middleware/lockmw/s3answers"
	"github.com/herdlock/herdlock/middleware/lockmw/s3answers/internal/s3rver"
)

// bucket is the bucket every test's server has.
const bucket = "herdlock-answers-test"

// server is the s3rver that the tests share; TestMain starts and stops it.
var server *s3rver.Server

func TestMain(m *testing.M) {
	s, err := s3rver.Start(context.Background(), bucket)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	server = s
	code := m.Run()
	if err := s.Close(); err != nil && code == 0 {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	os.Exit(code)
}

// newStore returns a Store on the shared server under prefix, with a
// client of its own, as another Lambda function's would be.
func newStore(t *testing.T, prefix string) (*s3answers.Store, *s3.Client) {
	t.Helper()
	client := s3rver.NewClient(server.Endpoint())
	st, err := s3answers.New(client, bucket, prefix)
	if err != nil {
		t.Fatalf("New() = %v", err)
	}
	return st, client
}

// noise returns n bytes that do not compress.
func noise(n int, seed byte) []byte {
	b := make([]byte, n)
	r := rand.NewChaCha8([32]byte{seed})
	_, _ = r.Read(b)
	return b
}
