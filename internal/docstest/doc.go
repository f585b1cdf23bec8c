// Package docstest ties the defaults the documentation states to the
// code's values: the defaults box of README.md and the option tables of
// docs/configuration.md are parsed, and each default that the code keeps
// in an exported constant (lockcore.DefaultLease and the like) must be the
// documented one. docs/configuration.md must also have a row for every
// exported With… option of the packages a user imports.
//
// A table row is read as "| `name` | `value` ... | ... |": the first code
// span of the first cell names the option, the first code span of the
// second cell is its documented default. A value is a Go duration
// ("6s", "5m", "168h"), a number, a size in KiB ("64KiB"), or a word; a
// cell may list several values ("`5`, `2s`").
package docstest
