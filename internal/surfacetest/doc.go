// Package surfacetest holds the test that keeps the exported surface of
// the packages a user imports within its budget: top-level exported
// identifiers and functional options, counted as go/doc lists them.
package surfacetest
