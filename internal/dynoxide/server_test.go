package dynoxide_test

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/herdlock/herdlock/internal/dynalite"
	"github.com/herdlock/herdlock/internal/dynoxide"
	"github.com/herdlock/herdlock/lockcore"
)

func TestStartAnswersAndCloseStops(t *testing.T) {
	s, err := dynoxide.Start(context.Background())
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

// TestServersAreSeparate starts two servers at once: each has its own port
// and its own tables.
func TestServersAreSeparate(t *testing.T) {
	a, err := dynoxide.Start(context.Background())
	if err != nil {
		t.Fatalf("Start() = %v", err)
	}
	defer a.Close()
	b, err := dynoxide.Start(context.Background())
	if err != nil {
		t.Fatalf("second Start() = %v", err)
	}
	defer b.Close()
	if a.Endpoint() == b.Endpoint() {
		t.Fatalf("both servers at %s", a.Endpoint())
	}
	if err := lockcore.CreateTable(t.Context(), dynalite.NewClient(a.Endpoint()), "only-a"); err != nil {
		t.Fatalf("CreateTable() = %v", err)
	}
	out, err := dynalite.NewClient(b.Endpoint()).ListTables(t.Context(), &dynamodb.ListTablesInput{})
	if err != nil {
		t.Fatalf("ListTables() = %v", err)
	}
	if len(out.TableNames) != 0 {
		t.Errorf("second server's tables = %v, want none", out.TableNames)
	}
}

// TestFailedConditionCarriesItem pins the behaviour the ALL_OLD proxy
// exists for on dynalite: Dynoxide returns the item with a failed
// condition by itself.
func TestFailedConditionCarriesItem(t *testing.T) {
	s, err := dynoxide.Start(context.Background())
	if err != nil {
		t.Fatalf("Start() = %v", err)
	}
	defer s.Close()
	client := dynalite.NewClient(s.Endpoint())
	if err := lockcore.CreateTable(t.Context(), client, "cond"); err != nil {
		t.Fatalf("CreateTable() = %v", err)
	}
	key := map[string]types.AttributeValue{"lockKey": &types.AttributeValueMemberS{Value: "k"}}
	if _, err := client.PutItem(t.Context(), &dynamodb.PutItemInput{TableName: aws.String("cond"), Item: map[string]types.AttributeValue{
		"lockKey": key["lockKey"], "v": &types.AttributeValueMemberN{Value: "1"},
	}}); err != nil {
		t.Fatalf("PutItem() = %v", err)
	}
	_, err = client.UpdateItem(t.Context(), &dynamodb.UpdateItemInput{
		TableName: aws.String("cond"), Key: key,
		UpdateExpression:                    aws.String("SET v = :two"),
		ConditionExpression:                 aws.String("attribute_not_exists(lockKey)"),
		ExpressionAttributeValues:           map[string]types.AttributeValue{":two": &types.AttributeValueMemberN{Value: "2"}},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var ccf *types.ConditionalCheckFailedException
	if !errors.As(err, &ccf) {
		t.Fatalf("UpdateItem() = %v, want a ConditionalCheckFailedException", err)
	}
	if v, ok := ccf.Item["v"].(*types.AttributeValueMemberN); !ok || v.Value != "1" {
		t.Errorf("failed condition's item = %v, want the item with v = 1", ccf.Item)
	}
}

// TestStartRetriesTakenPort has the first server exit the way Dynoxide does
// when its port was taken between Start's pick and its bind; Start tries
// another port and returns the second server.
func TestStartRetriesTakenPort(t *testing.T) {
	real, err := dynoxide.Binary()
	if err != nil {
		t.Fatalf("Binary() = %v", err)
	}
	dir := t.TempDir()
	count := filepath.Join(dir, "count")
	fake := filepath.Join(dir, "node_modules", "@dynoxide", "linux-x64", "dynoxide")
	if err := os.MkdirAll(filepath.Dir(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	script := "#!/bin/sh\n" +
		"echo x >> '" + count + "'\n" +
		"if [ \"$(wc -l < '" + count + "')\" -eq 1 ]; then echo \"error: port $4 is already in use\" >&2; exit 1; fi\n" +
		"exec '" + real + "' \"$@\"\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv(dynoxide.DirEnv, dir)
	s, err := dynoxide.Start(context.Background())
	if err != nil {
		t.Fatalf("Start() = %v", err)
	}
	defer s.Close()
	b, err := os.ReadFile(count)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n != 2 {
		t.Errorf("server starts = %d, want 2 (one refused port, one retry)", n)
	}
	resp, err := http.Get(s.Endpoint())
	if err != nil {
		t.Fatalf("GET %s = %v", s.Endpoint(), err)
	}
	resp.Body.Close()
	if got := resp.Header.Get("Server"); !strings.HasPrefix(got, "Dynoxide/") {
		t.Errorf("Server header = %q, want Dynoxide/...", got)
	}
}

func TestStartWithoutPackageNamesInstallCommand(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "package.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv(dynoxide.DirEnv, dir)
	_, err := dynoxide.Start(context.Background())
	if err == nil || !strings.Contains(err.Error(), "make deps") {
		t.Fatalf("Start() = %v, want an error naming make deps", err)
	}
}

func TestStartBrokenBinaryShowsStderr(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "node_modules", "@dynoxide", "linux-x64", "dynoxide")
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, []byte("#!/bin/sh\necho 'broken on purpose' >&2\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv(dynoxide.DirEnv, dir)
	_, err := dynoxide.Start(context.Background())
	if err == nil || !strings.Contains(err.Error(), "broken on purpose") || !strings.Contains(err.Error(), "exited before listening") {
		t.Fatalf("Start() = %v, want an exit error with the server's stderr", err)
	}
}

func TestBinaryIsPinnedPackage(t *testing.T) {
	bin, err := dynoxide.Binary()
	if err != nil {
		t.Fatalf("Binary() = %v", err)
	}
	if !strings.Contains(filepath.ToSlash(bin), "node_modules/@dynoxide/") {
		t.Errorf("Binary() = %q, want a path under node_modules/@dynoxide", bin)
	}
}
