package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

// Exit codes (see the package documentation).
const (
	exitOK           = 0
	exitError        = 1
	exitUsage        = 2
	exitNotFound     = 3
	exitRefused      = 4
	exitNotConfirmed = 5
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
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		if len(args) > 1 {
			if c, ok := lookup(args[1]); ok {
				commandUsage(e.stdout, c, newFlagSet(c))
				return exitOK
			}
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
		fmt.Fprintf(e.stderr, "herdlock %s: %v\n", c.name, err)
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
The table defaults to $HERDLOCK_TABLE. Region, credentials and profile come
from the usual AWS configuration; --region, --profile and --endpoint-url
override them. "herdlock COMMAND --help" shows a command's flags.

Exit codes: 0 ok, 1 error, 2 usage, 3 not found, 4 refused (stale revision,
or released with success), 5 not confirmed.
`

func commandUsage(w io.Writer, c command, fs *flag.FlagSet) {
	fmt.Fprintf(w, "Usage: herdlock %s %s\n\n%s\n", c.name, c.args, c.summary)
	if c.detail != "" {
		fmt.Fprintf(w, "\n%s\n", c.detail)
	}
	fmt.Fprintf(w, "\nExample:\n  %s\n\nFlags:\n", c.example)
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
	fmt.Fprint(w, exitCodesHelp)
}
