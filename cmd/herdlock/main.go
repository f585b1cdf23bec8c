package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"
	"time"
)

// Exit codes (see the package documentation).
const (
	exitOK            = 0
	exitError         = 1
	exitUsage         = 2
	exitNotFound      = 3
	exitRefused       = 4
	exitNotConfirmed  = 5
	exitTableNotFound = 6
)

// envTable names the default table.
const envTable = "HERDLOCK_TABLE"

// exitErr carries an exit code with the message printed for it.
type exitErr struct {
	code int
	err  error
}

func (e *exitErr) Error() string { return e.err.Error() }
func (e *exitErr) Unwrap() error { return e.err }

func usageErr(format string, args ...any) error {
	return &exitErr{exitUsage, fmt.Errorf(format, args...)}
}

// env is what a command may touch: its streams, environment and clock.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string
	now            func() time.Time
}

// command is one subcommand.
type command struct {
	name    string
	args    string // the synopsis after the name
	summary string // one line for the overview
	detail  string // more for the command's --help; may be empty
	example string
	flags   func(fs *flag.FlagSet) func(ctx context.Context, e *env, args []string) error
}

var commands = []command{createTableCommand, getCommand, listCommand, releaseCommand, watchCommand}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], &env{
		stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr,
		getenv: os.Getenv, now: time.Now,
	})
	stop()
	os.Exit(code)
}

// run executes one command line and returns its exit code.
func run(ctx context.Context, args []string, e *env) int {
	if wantsVersion(args) {
		fmt.Fprintln(e.stdout, versionLine(debug.ReadBuildInfo()))
		return exitOK
	}
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		if len(args) > 1 {
			c, ok := lookup(args[1])
			if !ok {
				fmt.Fprintf(e.stderr, "herdlock help: unknown command %q\n\n", args[1])
				overview(e.stderr)
				return exitUsage
			}
			fs := newFlagSet(c)
			c.flags(fs)
			commandUsage(e.stdout, c, fs)
			return exitOK
		}
		overview(e.stdout)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	c, ok := lookup(args[0])
	if !ok {
		fmt.Fprintf(e.stderr, "herdlock: unknown command %q\n\n", args[0])
		overview(e.stderr)
		return exitUsage
	}
	fs := newFlagSet(c)
	runFn := c.flags(fs)
	pos, err := parseInterspersed(fs, args[1:])
	if errors.Is(err, flag.ErrHelp) {
		commandUsage(e.stdout, c, fs)
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "herdlock %s: %s\n", c.name, flagError(err))
		fmt.Fprintf(e.stderr, "usage: herdlock %s %s (see herdlock %s --help)\n", c.name, c.args, c.name)
		return exitUsage
	}
	err = runFn(ctx, e, pos)
	if err == nil {
		return exitOK
	}
	fmt.Fprintf(e.stderr, "herdlock %s: %v\n", c.name, err)
	var ee *exitErr
	if errors.As(err, &ee) {
		if ee.code == exitUsage {
			fmt.Fprintf(e.stderr, "usage: herdlock %s %s (see herdlock %s --help)\n", c.name, c.args, c.name)
		}
		return ee.code
	}
	return exitError
}

// wantsVersion reports whether --version (or -version) stands among the
// flags of a command line, before any "--": it prints the version whatever
// else the line holds, as the overview's synopsis promises.
func wantsVersion(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "--version", "-version":
			return true
		}
	}
	return false
}

func lookup(name string) (command, bool) {
	for _, c := range commands {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

func newFlagSet(c command) *flag.FlagSet {
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // run prints the error and the usage itself
	return fs
}

// parseInterspersed parses flags placed anywhere among the positional
// arguments ("release G I --revision R"); everything after "--" is
// positional.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// wantArgs checks the number of positional arguments.
func wantArgs(args []string, names ...string) error {
	if len(args) != len(names) {
		return usageErr("want %d arguments (%s), got %d", len(names), strings.Join(names, " "), len(args))
	}
	for i, a := range args {
		if strings.TrimSpace(a) == "" {
			return usageErr("blank %s", names[i])
		}
	}
	return nil
}

func overview(w io.Writer) {
	fmt.Fprint(w, `herdlock inspects and repairs herdlock lock tables in DynamoDB.

Usage: herdlock COMMAND [flags] ARGS
       herdlock --version

Commands:
`)
	for _, c := range commands {
		fmt.Fprintf(w, "  %-13s %s\n", c.name, c.summary)
	}
	fmt.Fprint(w, `
Examples:
`)
	for _, c := range commands {
		fmt.Fprintf(w, "  %s\n", c.example)
	}
	fmt.Fprint(w, exitCodesHelp)
}

const exitCodesHelp = `
Every command takes --table (default $HERDLOCK_TABLE) and --output text or
json (json: one JSON document on stdout, a JSON line per change for watch;
errors go to stderr). Region, credentials and profile come from the usual
AWS configuration; --region, --profile and --endpoint-url override them.
Flags may come before or after the arguments. "herdlock COMMAND --help"
shows a command's flags.

Exit codes:
  0  ok (watch: stopped by Ctrl-C)
  1  error talking to DynamoDB, or an item that does not decode
  2  usage: unknown command, bad flag, missing argument, bad table name
  3  not found: get or release on an absent lock item
  4  refused: release at a revision the item does not carry (stale or
     mistyped), or on an item released with success
  5  not confirmed: release answered with anything but "y"
  6  table not found
`
