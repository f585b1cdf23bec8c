package lockmw_test

import (
	"bufio"
	"bytes"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// snippet is a file that uses lockmw with an event type, handlers and a
// store; %s is one expression.
const snippet = `package snippet

import (
	"context"

	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/lockcore/storeapi"
	"github.com/herdlock/herdlock/middleware/lockmw"
)

type event struct{ Pair string }

func fetch(ctx context.Context, e event) (string, error) { return e.Pair, nil }
func key(ctx context.Context, e event) (string, error)   { return e.Pair, nil }

var store storeapi.Store = lockcore.NewMemoryStore()

var _ = %s
`

// TestMismatchedFunctionsDoNotCompile type-checks small programs against
// the compiled lockmw: a key function, read handler, failure handler or
// result-reference function of other types than the handler's, or a
// missing store or key, is a compile error. The first cases must compile,
// so the checker is shown to accept correct code.
func TestMismatchedFunctionsDoNotCompile(t *testing.T) {
	tests := []struct {
		name string
		expr string
		want string // "" when the snippet must compile
	}{
		{"Wrap", `lockmw.Wrap(fetch, store, key)`, ""},
		{"WrapHandlers", `lockmw.WrapHandlers(lockmw.Handlers[event, string]{
			Fetch:      fetch,
			OnReleased: fetch,
			OnFailed:   func(ctx context.Context, e event, err error) (string, error) { return "", err },
			ResultRef:  func(s string) string { return s },
		}, store, key)`, ""},
		{"StaticKey", `lockmw.Wrap(fetch, store, lockmw.StaticKey[event]("all"))`, ""},
		{"key of another event type", `lockmw.Wrap(fetch, store,
			func(ctx context.Context, s string) (string, error) { return s, nil })`, "does not match"},
		{"static key of another event type", `lockmw.Wrap(fetch, store, lockmw.StaticKey[string]("all"))`, "does not match"},
		{"no store", `lockmw.Wrap(fetch, key)`, "not enough arguments"},
		{"store in the key's place", `lockmw.Wrap(fetch, store, store)`, "storeapi.Store"},
		{"read handler of another result type", `lockmw.Handlers[event, string]{Fetch: fetch,
			OnReleased: func(ctx context.Context, e event) (int, error) { return 0, nil }}`, "cannot use"},
		{"read handler of another event type", `lockmw.Handlers[event, string]{Fetch: fetch,
			OnReleased: func(ctx context.Context, s string) (string, error) { return s, nil }}`, "cannot use"},
		{"failure handler of another event type", `lockmw.Handlers[event, string]{Fetch: fetch,
			OnFailed: func(ctx context.Context, s string, err error) (string, error) { return s, nil }}`, "cannot use"},
		{"result reference of another result type", `lockmw.Handlers[event, string]{Fetch: fetch,
			ResultRef: func(n int) string { return "" }}`, "cannot use"},
		{"handlers of another event type than the key", `lockmw.WrapHandlers(lockmw.Handlers[string, string]{
			Fetch: func(ctx context.Context, s string) (string, error) { return s, nil }}, store, key)`, "does not match"},
	}
	imp := exportImporter(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := typeCheck(imp, fmt.Sprintf(snippet, tt.expr))
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("type check = %v, want it to compile", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("type check = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

// typeCheck type-checks one file and returns its first error.
func typeCheck(imp types.Importer, src string) error {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "snippet.go", src, 0)
	if err != nil {
		return err
	}
	conf := types.Config{Importer: imp}
	_, err = conf.Check("snippet", fset, []*ast.File{f}, nil)
	return err
}

// exportImporter returns an importer that reads the compiler's export data
// of lockmw, lockcore and their dependencies, which `go list -export`
// builds (or finds in the build cache).
func exportImporter(t *testing.T) types.Importer {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "go", "list", "-export", "-deps",
		"-f", "{{if .Export}}{{.ImportPath}}={{.Export}}{{end}}",
		"context", "github.com/herdlock/herdlock/lockcore", "github.com/herdlock/herdlock/middleware/lockmw")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -export: %v\n%s", err, stderr.String())
	}
	exports := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if path, file, ok := strings.Cut(sc.Text(), "="); ok {
			exports[path] = file
		}
	}
	lookup := func(path string) (io.ReadCloser, error) {
		file, ok := exports[path]
		if !ok {
			return nil, fmt.Errorf("no export data for %q", path)
		}
		return os.Open(file)
	}
	return importer.ForCompiler(token.NewFileSet(), "gc", lookup)
}
