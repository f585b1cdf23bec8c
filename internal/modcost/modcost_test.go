package main

import (
	"strings"
	"testing"
)

// banned are modules of the test harness, the example, the tracing SDKs
// and the S3 SDK (s3answers): a user of the library alone must not see them in go.sum.
var banned = []string{
	"github.com/anishathalye/porcupine",
	"github.com/truora/minidyn",
	"github.com/awslabs/goformation",
	"github.com/aws/aws-xray-sdk-go",
	"github.com/aws/aws-sdk-go ",
	"google.golang.org/grpc",
	"google.golang.org/protobuf",
	"go.opentelemetry.io/otel/sdk",
	"github.com/aws/aws-sdk-go-v2/service/s3 ",
}

// maxQuickStartModules is the target for the quick-start consumer's
// go list -m all (a bare aws-lambda-go + DynamoDB consumer has 22).
const maxQuickStartModules = 25

func TestQuickStartConsumer(t *testing.T) {
	repo, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	cs := consumers()
	f, err := measure(t.Context(), repo, t.TempDir(), cs[1], false)
	if err != nil {
		t.Fatal(err)
	}
	if f.Modules > maxQuickStartModules {
		t.Errorf("quick-start consumer: go list -m all has %d modules, want at most %d", f.Modules, maxQuickStartModules)
	}
	if bad := bannedIn(f.Sum); len(bad) > 0 {
		t.Errorf("quick-start consumer's go.sum names %v", bad)
	}
}

// TestBannedCatchesAnAdapter shows the go.sum check failing: the X-Ray
// consumer does have the X-Ray SDK and aws-sdk-go v1 in its go.sum.
func TestBannedCatchesAnAdapter(t *testing.T) {
	repo, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	f, err := measure(t.Context(), repo, t.TempDir(), consumers()[2], false)
	if err != nil {
		t.Fatal(err)
	}
	bad := bannedIn(f.Sum)
	if len(bad) == 0 {
		t.Errorf("xray consumer's go.sum: bannedIn found nothing, want the X-Ray SDK")
	}
}

// bannedIn lists the banned modules that sum names.
func bannedIn(sum string) []string {
	var found []string
	for _, b := range banned {
		for line := range strings.Lines(sum) {
			if strings.HasPrefix(line, b) {
				found = append(found, strings.TrimSpace(b))
				break
			}
		}
	}
	return found
}
