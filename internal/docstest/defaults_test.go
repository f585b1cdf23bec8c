package docstest

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/middleware/lockmw"
)

// codeDefaults are the defaults the code keeps in exported constants (the
// packages' own tests check those they keep unexported), by
// the option name the documentation uses, in the order a cell lists them.
var codeDefaults = map[string][]any{
	// lockcore's exported defaults; lockcore's own test checks the rest
	// (TestUnexportedDefaultsAreDocumented).
	"lockcore.WithLease":                  {lockcore.DefaultLease},
	"lockcore.WithMaxHold":                {lockcore.DefaultMaxHold},
	"lockcore.WithPollInterval":           {lockcore.DefaultPollInterval},
	"lockcore.WithMaxWait":                {lockcore.DefaultMaxWait},
	"lockcore.FailureEpisode.MaxAttempts": {lockcore.DefaultMaxAttempts},

	"lockmw.WithLockOptions(lockcore.WithFreshSuccess(d))": {lockmw.DefaultFreshSuccess},
	"lockmw.WithSafetyMargin":                              {lockmw.DefaultSafetyMargin},
	// lockmw's other defaults, and those of httpmw, sqsmw and idempotency,
	// are unexported: their in-package tests check their rows
	// (middleware/lockmw/docs_internal_test.go, the fronts' defaults tests).
}

// readmeBox are the defaults the README's box must state: those that
// change what a caller gets.
var readmeBox = []string{
	"lockmw.WithLockOptions(lockcore.WithFreshSuccess(d))",
	"lockmw.WithSafetyMargin",
	"lockcore.WithMaxWait",
	"lockcore.WithLease",
	"lockcore.WithPollInterval",
	"lockcore.FailureEpisode.MaxAttempts",
	"lockcore.FailureEpisode.MaxHoldBack",
	"lockmw.WithoutCoalescing",
	"lockmw.Answers.MaxInlineBytes",
	"lockmw.WithLockGroup",
	"httpmw.WithIntegrationTimeout",
	"sqsmw.WithBatchTime",
	"idempotency.WithRetention",
}

// userPackages are the folders of the packages a user imports, by the
// name the documentation qualifies their options with.
var userPackages = map[string]string{
	"lockcore":    "lockcore",
	"lockmw":      "middleware/lockmw",
	"httpmw":      "middleware/httpmw",
	"sqsmw":       "middleware/sqsmw",
	"idempotency": "middleware/idempotency",
	"emf":         "emf",
}

func readRepoFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// exportedOptions lists the exported functions named With… of the
// package in dir (test files left out), qualified with pkg.
func exportedOptions(t *testing.T, pkg, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "..", dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if ok && fd.Recv == nil && fd.Name.IsExported() && strings.HasPrefix(fd.Name.Name, "With") {
				names = append(names, pkg+"."+fd.Name.Name)
			}
		}
	}
	slices.Sort(names)
	return names
}

// Every default docs/configuration.md states is the code's, and every
// exported option of the user's packages has a row there.
func TestConfigurationDefaultsAreTheCodes(t *testing.T) {
	var required []string
	for pkg, dir := range userPackages {
		required = append(required, exportedOptions(t, pkg, dir)...)
	}
	if len(required) < 30 { // the budget allows 40 across the packages; fewer than 30 means a folder moved
		t.Fatalf("found only %d exported options; the package folders moved?", len(required))
	}
	for name := range codeDefaults {
		required = append(required, name)
	}
	for _, err := range check(readRepoFile(t, "docs/configuration.md"), codeDefaults, required) {
		t.Errorf("docs/configuration.md: %v", err)
	}
}

// The README's defaults box states the defaults that change behaviour, as
// the code has them.
func TestREADMEDefaultsAreTheCodes(t *testing.T) {
	for _, err := range check(readRepoFile(t, "README.md"), codeDefaults, readmeBox) {
		t.Errorf("README.md: %v", err)
	}
}

// The check fails on a drifted default, a missing row, a cell without a
// value and a name documented twice, and passes the same table intact.
func TestCheckCatchesBrokenTables(t *testing.T) {
	const good = "| option | default | what |\n|---|---|---|\n" +
		"| `lockcore.WithLease` | `6s` (`DefaultLease`) | lease |\n" +
		"| `lockcore.WithReleaseRetries` | `5`, `2s` | retries |\n" +
		"| `lockmw.Answers.MaxInlineBytes` | `64KiB` | answer |\n" +
		"| `lockcore.WithDrift` | `0.01` | drift |\n" +
		"| `lockmw.WithLockGroup` | `herdlock` when `AWS_LAMBDA_FUNCTION_NAME` is unset | group |\n"
	want := map[string][]any{
		"lockcore.WithLease":            codeDefaults["lockcore.WithLease"],
		"lockcore.WithReleaseRetries":   {5, 2 * time.Second},
		"lockmw.Answers.MaxInlineBytes": {65536},
		"lockcore.WithDrift":            {0.01},
		"lockmw.WithLockGroup":          {"herdlock"},
	}
	required := []string{"lockcore.WithLease", "lockcore.WithReleaseRetries"}
	if errs := check(good, want, required); len(errs) != 0 {
		t.Fatalf("the intact table fails: %v", errors.Join(errs...))
	}
	tests := []struct {
		name    string
		table   string
		mention string
	}{
		{"drifted duration", strings.Replace(good, "`6s`", "`5s`", 1), "lockcore.WithLease: documented 5s, the code has 6s"},
		{"drifted second value", strings.Replace(good, "`5`, `2s`", "`5`, `3s`", 1), "documented 3s, the code has 2s"},
		{"value not in backticks", strings.Replace(good, "`5`, `2s`", "`5`, 2s", 1), "1 default value(s) in backticks"},
		{"drifted size", strings.Replace(good, "`64KiB`", "`32KiB`", 1), "documented 32768, the code has 65536"},
		{"drifted float", strings.Replace(good, "`0.01`", "`0.02`", 1), "documented 0.02, the code has 0.01"},
		{"drifted word", strings.Replace(good, "`herdlock` when", "`lock` when", 1), `documented "lock", the code has "herdlock"`},
		{"not a duration", strings.Replace(good, "`6s`", "`six seconds`", 1), `"six seconds" is not a duration`},
		{"missing row", strings.Replace(good, "| `lockcore.WithLease` | `6s` (`DefaultLease`) | lease |\n", "", 1), "lockcore.WithLease: no row documents its default"},
		{"documented twice", good + "| `lockcore.WithLease` | `6s` | again |\n", "documented again"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := check(tt.table, want, required)
			if len(errs) != 1 || !strings.Contains(errs[0].Error(), tt.mention) {
				t.Errorf("want one error mentioning %q, got %v", tt.mention, errs)
			}
		})
	}
}

// The real docs/configuration.md, broken, fails the check: the test above
// is not kinder than the documents it reads.
func TestCheckCatchesABrokenConfigurationPage(t *testing.T) {
	md := readRepoFile(t, "docs/configuration.md")
	broken := strings.Replace(md, "| `lockcore.WithLease` | `6s`", "| `lockcore.WithLease` | `7s`", 1)
	if broken == md {
		t.Fatal("docs/configuration.md has no lease row to break")
	}
	errs := check(broken, codeDefaults, nil)
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "lockcore.WithLease: documented 7s, the code has 6s") {
		t.Errorf("want the lease's drift, got %v", errs)
	}
}
