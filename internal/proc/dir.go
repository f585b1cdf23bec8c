package proc

import (
	"fmt"
	"os"
	"path/filepath"
)

// PackageDir finds the folder of a test server's pinned npm package,
// internal/<name>, which holds the file marker: the value of the
// environment variable env when it is set; else src, the launcher's own
// source folder, when it holds marker; else internal/<name> under the
// first folder at or above the working directory that holds go.mod and
// such a folder. The error names what was looked for and the variable that
// overrides it.
func PackageDir(name, env, src, marker string) (string, error) {
	if d := os.Getenv(env); d != "" {
		return d, nil
	}
	holds := func(d string) bool {
		_, err := os.Stat(filepath.Join(d, marker))
		return err == nil
	}
	if src != "" && holds(src) {
		return src, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("%s: %w", name, err)
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			if c := filepath.Join(d, "internal", name); holds(c) {
				return c, nil
			}
		}
		if filepath.Dir(d) == d {
			break
		}
	}
	return "", fmt.Errorf("%s: cannot find internal/%s (with %s) above %s; set %s", name, name, marker, wd, env)
}
