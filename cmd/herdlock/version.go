package main

import (
	"runtime/debug"
	"strings"
)

// versionLine is what --version prints: the module version Go stamped
// into the binary (a tag such as v0.2.0 for go install ...@v0.2.0, a
// pseudo-version for a build in a clone), the VCS revision when the build
// has one and no tagged version, and the Go version. Without build
// information it says so rather than inventing a version.
func versionLine(info *debug.BuildInfo, ok bool) string {
	if !ok || info == nil {
		return "herdlock (unknown version: no build information)"
	}
	version := info.Main.Version
	if version == "" || version == "(devel)" {
		version = "devel"
	}
	var rev, modified string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	var extra []string
	if rev != "" && !strings.Contains(version, shortRev(rev)) {
		r := "revision " + shortRev(rev)
		if modified == "true" {
			r += " (modified)"
		}
		extra = append(extra, r)
	}
	if info.GoVersion != "" {
		extra = append(extra, info.GoVersion)
	}
	line := "herdlock " + version
	if len(extra) > 0 {
		line += " (" + strings.Join(extra, ", ") + ")"
	}
	return line
}

// shortRev is the first 12 characters of a VCS revision, as a
// pseudo-version carries it.
func shortRev(rev string) string {
	if len(rev) > 12 {
		return rev[:12]
	}
	return rev
}
