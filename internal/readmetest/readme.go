// Package readmetest checks the Go blocks of the repository's README.md:
// every ```go block must build as it is written, so that what a reader
// copies compiles.
//
// A block that starts with a package clause is a complete file and is
// built on its own. Any other block is a fragment and must be marked, on
// the last non-blank line before its fence, with
//
//	<!-- go fragment: func(NAME TYPE, ...) -->
//
// It is then built as the body of a function with that signature, in a
// second file of the package of the nearest complete block above it: the
// signature names what the fragment takes from its surroundings, and
// everything else must come from that program or from the packages it
// imports. The blocks are built with go build in a directory of this
// package, inside the repository's module, so they use its go.mod.
package readmetest

import (
	"fmt"
	"go/parser"
	"go/token"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// block is one ```go block of the README.
type block struct {
	line     int    // the line of its opening fence
	code     string // its text
	fragment string // the signature of a marked fragment, "" for a complete file
}

// fragmentMark is the marker of a fragment.
var fragmentMark = regexp.MustCompile(`^<!--\s*go fragment:\s*(func\s*\(.*\))\s*-->$`)

// goBlocks returns the ```go blocks of a Markdown text, or an error for an
// unclosed block or an unmarked fragment.
func goBlocks(md string) ([]block, error) {
	lines := strings.Split(md, "\n")
	var blocks []block
	for i := 0; i < len(lines); i++ {
		if strings.TrimSpace(lines[i]) != "```go" {
			continue
		}
		b := block{line: i + 1, fragment: markBefore(lines, i)}
		end := i + 1
		for end < len(lines) && strings.TrimSpace(lines[end]) != "```" {
			end++
		}
		if end == len(lines) {
			return nil, fmt.Errorf("README line %d: unclosed ```go block", b.line)
		}
		b.code = strings.Join(lines[i+1:end], "\n") + "\n"
		if b.fragment == "" && !startsWithPackage(b.code) {
			return nil, fmt.Errorf("README line %d: a Go block without a package clause must be marked as a fragment "+
				"(<!-- go fragment: func(...) --> on the line before it) or made a complete file", b.line)
		}
		blocks = append(blocks, b)
		i = end
	}
	return blocks, nil
}

// markBefore returns the fragment signature marked before line i, or "".
func markBefore(lines []string, i int) string {
	for j := i - 1; j >= 0; j-- {
		l := strings.TrimSpace(lines[j])
		if l == "" {
			continue
		}
		if m := fragmentMark.FindStringSubmatch(l); m != nil {
			return m[1]
		}
		return ""
	}
	return ""
}

// startsWithPackage reports whether code's first statement is a package
// clause (comments before it allowed).
func startsWithPackage(code string) bool {
	_, err := parser.ParseFile(token.NewFileSet(), "block.go", code, parser.PackageClauseOnly)
	return err == nil
}

// packageName returns the package name of a complete file.
func packageName(code string) (string, error) {
	f, err := parser.ParseFile(token.NewFileSet(), "block.go", code, parser.PackageClauseOnly)
	if err != nil {
		return "", err
	}
	return f.Name.Name, nil
}

// importsOf returns the imports of a complete file by the name they are
// used under.
func importsOf(code string) (map[string]string, error) {
	f, err := parser.ParseFile(token.NewFileSet(), "block.go", code, parser.ImportsOnly)
	if err != nil {
		return nil, err
	}
	imports := map[string]string{}
	for _, im := range f.Imports {
		p, err := strconv.Unquote(im.Path.Value)
		if err != nil {
			return nil, err
		}
		name := path.Base(p)
		if im.Name != nil {
			name = im.Name.Name
		}
		imports[name] = p
	}
	return imports, nil
}

// stdImports are the standard packages a fragment may use although its
// program does not import them.
var stdImports = map[string]string{"context": "context", "time": "time", "errors": "errors", "fmt": "fmt", "os": "os"}

// fragmentFile returns the second file of program's package that holds
// fragment as the body of a function with the fragment's signature,
// importing what it uses of program's imports and of stdImports.
func fragmentFile(program string, b block) (string, error) {
	pkg, err := packageName(program)
	if err != nil {
		return "", err
	}
	imports, err := importsOf(program)
	if err != nil {
		return "", err
	}
	for name, p := range stdImports {
		if _, ok := imports[name]; !ok {
			imports[name] = p
		}
	}
	text := b.fragment + "\n" + b.code
	var used []string
	for name, p := range imports {
		if regexp.MustCompile(`\b` + regexp.QuoteMeta(name) + `\.`).MatchString(text) {
			used = append(used, fmt.Sprintf("\t%s %q\n", name, p))
		}
	}
	slices.Sort(used)
	var f strings.Builder
	fmt.Fprintf(&f, "package %s\n\nimport (\n%s)\n\n", pkg, strings.Join(used, ""))
	fmt.Fprintf(&f, "// README line %d, a fragment.\nfunc _%s {\n%s}\n", b.line, strings.TrimPrefix(b.fragment, "func"), b.code)
	return f.String(), nil
}
