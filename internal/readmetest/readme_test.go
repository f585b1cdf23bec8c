package readmetest

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// buildDir returns a fresh directory inside this package, so inside the
// module; its leading underscore keeps it out of ./... patterns.
func buildDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp(".", "_readme")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// Every Go block of README.md builds as written, and the first one, the
// quick-start, is a complete main package.
func TestREADMEGoBlocksBuild(t *testing.T) {
	md, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := goBlocks(string(md))
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) == 0 {
		t.Fatal("README.md has no Go block")
	}
	if pkg, err := packageName(blocks[0].code); blocks[0].fragment != "" || err != nil || pkg != "main" ||
		!strings.Contains(blocks[0].code, "func main()") {
		t.Errorf("README line %d: the first Go block must be a complete package main (package %q, %v)", blocks[0].line, pkg, err)
	}
	if err := buildBlocks(buildDir(t), blocks); err != nil {
		t.Error(err)
	}
}

// The quick-start as it was (no package, undefined names, an unused err)
// fails: unmarked, it is refused; marked as a fragment of a program that
// lacks what it uses, it does not build.
func TestBrokenBlocksFail(t *testing.T) {
	old := "store, err := lockcore.NewDynamoStore(dynamodb.NewFromConfig(cfg), os.Getenv(\"LOCK_TABLE\"))\n" +
		"h := lockmw.Wrap(fetchRate, store, func(ctx context.Context, e Event) (string, error) { return e.Pair, nil })\n" +
		"lambda.Start(h)\n"
	if _, err := goBlocks("## Using it\n\n```go\n" + old + "```\n"); err == nil || !strings.Contains(err.Error(), "line 3") {
		t.Errorf("goBlocks(unmarked fragment) = %v, want an error naming line 3", err)
	}
	program := "package main\n\nimport (\n\t\"github.com/aws/aws-lambda-go/lambda\"\n\t\"github.com/herdlock/herdlock/lockcore\"\n" +
		"\t\"github.com/herdlock/herdlock/middleware/lockmw\"\n)\n\ntype Event struct{ Pair string }\n\n" +
		"var _, _, _ = lambda.Start, lockcore.ErrConfig, lockmw.ErrKey\n\nfunc main() {}\n"
	md := "```go\n" + program + "```\n\n<!-- go fragment: func() -->\n```go\n" + old + "```\n"
	blocks, err := goBlocks(md)
	if err != nil || len(blocks) != 2 || blocks[1].fragment != "func()" {
		t.Fatalf("goBlocks(program, marked fragment) = %+v, %v; want 2 blocks, the second a fragment", blocks, err)
	}
	err = buildBlocks(buildDir(t), blocks)
	frag := fmt.Sprintf("/line%d/fragment.go", blocks[1].line)
	if err == nil || !strings.Contains(err.Error(), frag) || strings.Contains(err.Error(), "/line1/") {
		t.Errorf("buildBlocks(old quick-start) = %v, want build errors in %s only", err, frag)
	}
	for _, want := range []string{"undefined: cfg", "undefined: fetchRate", "declared and not used: err"} {
		if err != nil && !strings.Contains(err.Error(), want) {
			t.Errorf("build error lacks %q:\n%v", want, err)
		}
	}
}

func TestFragmentFile(t *testing.T) {
	program := "package main\n\nimport (\n\t\"context\"\n\n\tlmw \"github.com/herdlock/herdlock/middleware/lockmw\"\n)\n\nfunc main() { _ = context.Background; _ = lmw.ErrKey }\n"
	f, err := fragmentFile(program, block{line: 9, fragment: "func(ctx context.Context)", code: "d := time.Second\n_ = lmw.ErrKey\n_ = d\n"})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"package main\n", "\tcontext \"context\"\n", "\tlmw \"github.com/herdlock/herdlock/middleware/lockmw\"\n",
		"\ttime \"time\"\n", "// README line 9, a fragment.\nfunc _(ctx context.Context) {\nd := time.Second\n"} {
		if !strings.Contains(f, want) {
			t.Errorf("fragmentFile() lacks %q:\n%s", want, f)
		}
	}
	if strings.Contains(f, "\"os\"") || strings.Contains(f, "\"fmt\"") {
		t.Errorf("fragmentFile() imports what the fragment does not use:\n%s", f)
	}
}
