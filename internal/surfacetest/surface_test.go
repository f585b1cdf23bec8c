package surfacetest

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// budget is the ceiling of one package's exported surface.
type budget struct {
	dir         string // the package's folder, from the repository root
	identifiers int    // at most this many top-level exported identifiers
	options     int    // at most this many options (names starting with With)
}

// budgets are the ceilings of the packages a user imports. Their sum is
// the whole surface's: at most 200 identifiers and 40 options.
var budgets = []budget{
	{dir: "lockcore", identifiers: 85, options: 16},
	{dir: "middleware/lockmw", identifiers: 40, options: 9},
	{dir: "middleware/httpmw", identifiers: 20, options: 4},
	{dir: "middleware/sqsmw", identifiers: 10, options: 3},
	{dir: "emf", identifiers: 25, options: 4},
	{dir: "middleware/idempotency", identifiers: 20, options: 4},
}

// The whole surface's ceilings.
const (
	maxIdentifiers = 200
	maxOptions     = 40
)

// over returns what s exceeds of b, or nil.
func over(b budget, s Surface) []error {
	var errs []error
	if n := len(s.Identifiers); n > b.identifiers {
		errs = append(errs, fmt.Errorf("%s: %d exported identifiers, the budget is %d: %s",
			b.dir, n, b.identifiers, strings.Join(s.Identifiers, " ")))
	}
	if n := len(s.Options); n > b.options {
		errs = append(errs, fmt.Errorf("%s: %d options, the budget is %d: %s",
			b.dir, n, b.options, strings.Join(s.Options, " ")))
	}
	return errs
}

func count(t *testing.T, dir string) Surface {
	t.Helper()
	s, err := Count(filepath.Join("..", "..", dir))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Each package a user imports stays within its budget, and so does their
// sum.
func TestSurfaceWithinBudget(t *testing.T) {
	total, totalOptions := 0, 0
	for _, b := range budgets {
		s := count(t, b.dir)
		t.Logf("%s: %d identifiers (budget %d), %d options (budget %d)",
			b.dir, len(s.Identifiers), b.identifiers, len(s.Options), b.options)
		total += len(s.Identifiers)
		totalOptions += len(s.Options)
		for _, err := range over(b, s) {
			t.Error(err)
		}
	}
	t.Logf("all: %d identifiers (at most %d), %d options (at most %d)", total, maxIdentifiers, totalOptions, maxOptions)
	if total > maxIdentifiers || totalOptions > maxOptions {
		t.Errorf("all packages: %d identifiers and %d options, at most %d and %d", total, totalOptions, maxIdentifiers, maxOptions)
	}
}

// The check can fail: lockcore against a ceiling of one identifier and no
// option is over on both counts, and the counter sees what go/doc lists
// (a constant, a function, a type with its constructor and an option).
func TestBudgetCheckCanFail(t *testing.T) {
	selfCheck := budget{dir: "lockcore", identifiers: 1, options: 0}
	s := count(t, selfCheck.dir)
	errs := over(selfCheck, s)
	if len(errs) != 2 {
		t.Fatalf("lockcore against a ceiling of 1 identifier and 0 options: %d errors, want 2: %v", len(errs), errs)
	}
	for _, name := range []string{"DefaultLease", "CheckStore", "Lock", "New", "WithLease", "ErrConfig"} {
		found := false
		for _, id := range s.Identifiers {
			found = found || id == name
		}
		if !found {
			t.Errorf("the count of lockcore misses %s", name)
		}
	}
	for _, name := range []string{"TryAcquireElseWaitForRelease", "HasLock"} { // methods are not counted
		for _, id := range s.Identifiers {
			if id == name {
				t.Errorf("the count of lockcore has the method %s", name)
			}
		}
	}
	if len(s.Options) == 0 || !strings.HasPrefix(s.Options[0], "With") {
		t.Errorf("options of lockcore = %v, want names starting with With", s.Options)
	}
}

// Every budget row names a package folder that exists, so a moved package
// does not silently drop out of the count.
func TestBudgetRowsNamePackages(t *testing.T) {
	seen := map[string]bool{}
	for _, b := range budgets {
		if seen[b.dir] {
			t.Errorf("%s has two rows", b.dir)
		}
		seen[b.dir] = true
		if s := count(t, b.dir); len(s.Identifiers) == 0 {
			t.Errorf("%s: no exported identifiers; is it the right folder?", b.dir)
		}
	}
}
