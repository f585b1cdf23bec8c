package main

import (
	"flag"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// commandUsage writes a command's help: its synopsis, what it does, an
// example, its flags and the connection flags, with two dashes as in the
// synopsis, then the exit codes.
func commandUsage(w io.Writer, c command, fs *flag.FlagSet) {
	fmt.Fprintf(w, "Usage: herdlock %s %s\n\n%s\n", c.name, c.args, c.summary)
	if c.detail != "" {
		fmt.Fprintf(w, "\n%s\n", c.detail)
	}
	fmt.Fprintf(w, "\nExample:\n  %s\n\nFlags:\n", c.example)
	isConn := func(name string) bool { return slices.Contains(connFlags, name) }
	printFlags(w, fs, func(name string) bool { return !isConn(name) })
	fmt.Fprint(w, "\nAWS connection flags:\n")
	printFlags(w, fs, isConn)
	fmt.Fprint(w, exitCodesHelp)
}

// printFlags lists the flags of fs that keep selects, one a line, as
// "--name VALUE  usage (default D)".
func printFlags(w io.Writer, fs *flag.FlagSet, keep func(string) bool) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fs.VisitAll(func(f *flag.Flag) {
		if !keep(f.Name) {
			return
		}
		value, usage := flag.UnquoteUsage(f)
		name := "--" + f.Name
		if value != "" {
			name += " " + value
		}
		switch f.DefValue {
		case "", "false", "0", "0s":
		default:
			usage += " (default " + f.DefValue + ")"
		}
		fmt.Fprintf(tw, "  %s\t%s\n", name, usage)
	})
	tw.Flush()
}

// oneDashFlag finds the flag names in the flag package's parse errors,
// which it writes with one dash ("flag provided but not defined: -x").
var oneDashFlag = regexp.MustCompile(`(^|\s)-([A-Za-z][\w-]*)`)

// flagError rewrites a parse error of the flag package with two dashes, as
// the help and the synopses write flags.
func flagError(err error) string {
	msg := err.Error()
	if strings.HasPrefix(msg, "bad flag syntax") {
		return msg
	}
	return oneDashFlag.ReplaceAllString(msg, "$1--$2")
}

// durationFlag defines a duration flag whose parse error says what it
// wants ("want a duration with a unit, such as 1s or 200ms") instead of
// the flag package's bare "parse error".
func durationFlag(fs *flag.FlagSet, name string, value time.Duration, usage string) *time.Duration {
	d := value
	fs.Func(name, usage+" (default "+value.String()+")", func(s string) error {
		v, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("want a duration with a unit, such as 1s or 200ms, got %q", s)
		}
		d = v
		return nil
	})
	return &d
}
