package surfacetest

import (
	"fmt"
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strings"
)

// Surface is the exported surface of one package.
type Surface struct {
	// Identifiers are the top-level exported names go/doc lists: constants,
	// variables, functions and types, and the constants, variables and
	// functions (constructors) go/doc attaches to a type. Methods and
	// struct fields are not counted.
	Identifiers []string
	// Options are the identifiers that start with "With": functional
	// options, release options included.
	Options []string
}

// Count returns the surface of the package in dir, test files left out.
func Count(dir string) (Surface, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return Surface{}, err
	}
	fset := token.NewFileSet()
	var parsed []*ast.File
	for _, n := range names {
		if strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, n, nil, parser.ParseComments)
		if err != nil {
			return Surface{}, err
		}
		parsed = append(parsed, f)
	}
	if len(parsed) == 0 {
		return Surface{}, fmt.Errorf("%s: no Go files", dir)
	}
	p, err := doc.NewFromFiles(fset, parsed, dir)
	if err != nil {
		return Surface{}, err
	}
	var s Surface
	add := func(name string) {
		s.Identifiers = append(s.Identifiers, name)
		if strings.HasPrefix(name, "With") {
			s.Options = append(s.Options, name)
		}
	}
	values := func(vs []*doc.Value) {
		for _, v := range vs {
			for _, n := range v.Names {
				add(n)
			}
		}
	}
	values(p.Consts)
	values(p.Vars)
	for _, f := range p.Funcs {
		add(f.Name)
	}
	for _, t := range p.Types {
		add(t.Name)
		values(t.Consts)
		values(t.Vars)
		for _, f := range t.Funcs {
			add(f.Name)
		}
	}
	slices.Sort(s.Identifiers)
	slices.Sort(s.Options)
	return s, nil
}
