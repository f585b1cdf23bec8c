package main

import (
	"encoding/json"

	"bytes"
	"flag"
	"fmt"
	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/lockcore/storeapi"
	"os"
	"regexp"
	"runtime/debug"
	"strings"
	"testing"
	"time"
)

// helpOf runs "herdlock help NAME" in process.
func helpOf(t *testing.T, name string) string {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(t.Context(), []string{"help", name}, &env{
		stdin: strings.NewReader(""), stdout: &out, stderr: &errOut,
		getenv: func(string) string { return "" }, now: time.Now,
	})
	if code != exitOK {
		t.Fatalf("help %s: exit %d, stderr %s", name, code, errOut.String())
	}
	return out.String()
}

// singleDash finds a flag written with one dash.
var singleDash = regexp.MustCompile(`(^|[\s\[|(])-[A-Za-z]`)

// Every command's help lists its flags with two dashes, as its synopsis
// does, and the synopsis names --table and --output, which every command
// takes.
func TestHelpFlagsInOneStyle(t *testing.T) {
	for _, c := range commands {
		help := helpOf(t, c.name)
		for i, line := range strings.Split(help, "\n") {
			if singleDash.MatchString(line) {
				t.Errorf("help %s line %d writes a flag with one dash: %q", c.name, i+1, line)
			}
		}
		fs := newFlagSet(c)
		c.flags(fs)
		fs.VisitAll(func(f *flag.Flag) {
			if !strings.Contains(help, "\n  --"+f.Name+" ") && !strings.Contains(help, "\n  --"+f.Name+"\n") {
				t.Errorf("help %s does not list --%s", c.name, f.Name)
			}
		})
		for _, want := range []string{"--table", "--output"} {
			if !strings.Contains(c.args, want) || fs.Lookup(strings.TrimPrefix(want, "--")) == nil {
				t.Errorf("%s: synopsis %q or flags lack %s", c.name, c.args, want)
			}
		}
		if singleDash.MatchString(c.args) || singleDash.MatchString(c.example) {
			t.Errorf("%s: synopsis %q or example %q writes a flag with one dash", c.name, c.args, c.example)
		}
	}
}

// The examples show revisions in their real shape, as lockcore writes
// them.
func TestExampleRevisionsAreReal(t *testing.T) {
	revFlag := regexp.MustCompile(`--revision[ =](\S+)`)
	seen := 0
	for _, c := range commands {
		for _, m := range revFlag.FindAllStringSubmatch(c.example+"\n"+c.detail, -1) {
			seen++
			if !revisionShape.MatchString(m[1]) {
				t.Errorf("%s example revision %q: want 32 lower-case hex digits", c.name, m[1])
			}
		}
	}
	if seen == 0 {
		t.Error("no example shows --revision")
	}
}

// The exit codes are documented, with the same numbers, in the help and
// in the package documentation.
func TestExitCodesDocumented(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	codes := map[int]string{exitOK: "", exitError: "error", exitUsage: "usage", exitNotFound: "not found",
		exitRefused: "refused", exitNotConfirmed: "not confirmed", exitTableNotFound: "table not found"}
	for code, word := range codes {
		help := regexp.MustCompile(fmt.Sprintf(`(?m)^  %d  .*%s`, code, regexp.QuoteMeta(word)))
		if !help.MatchString(exitCodesHelp) {
			t.Errorf("help lacks exit code %d (%s):\n%s", code, word, exitCodesHelp)
		}
		godoc := regexp.MustCompile(fmt.Sprintf(`(?m)^//\t%d  .*%s`, code, regexp.QuoteMeta(word)))
		if !godoc.Match(doc) {
			t.Errorf("doc.go lacks exit code %d (%s)", code, word)
		}
	}
}

func TestVersionLine(t *testing.T) {
	tests := []struct {
		name string
		info *debug.BuildInfo
		ok   bool
		want string
	}{
		{"no build info", nil, false, "herdlock (unknown version: no build information)"},
		{"go install at a tag", &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "v0.2.0"}}, true,
			"herdlock v0.2.0 (go1.26.0)"},
		{"pseudo-version", &debug.BuildInfo{GoVersion: "go1.26.0",
			Main:     debug.Module{Version: "v0.1.1-0.20261201120000-70b4b4e1a2b3"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "70b4b4e1a2b3c4d5e6f7"}}}, true,
			"herdlock v0.1.1-0.20261201120000-70b4b4e1a2b3 (go1.26.0)"},
		{"devel with VCS", &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "(devel)"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "70b4b4e1a2b3c4d5e6f7"}, {Key: "vcs.modified", Value: "true"}}}, true,
			"herdlock devel (revision 70b4b4e1a2b3 (modified), go1.26.0)"},
		{"devel without VCS", &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "(devel)"}}, true,
			"herdlock devel (go1.26.0)"},
	}
	for _, tt := range tests {
		if got := versionLine(tt.info, tt.ok); got != tt.want {
			t.Errorf("versionLine(%s) = %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestFlagErrorTwoDashes(t *testing.T) {
	for in, want := range map[string]string{
		"flag provided but not defined: -bogus":               "flag provided but not defined: --bogus",
		`invalid value "x" for flag -interval: parse error`:   `invalid value "x" for flag --interval: parse error`,
		"flag needs an argument: -revision":                   "flag needs an argument: --revision",
		`invalid boolean value "maybe" for -yes: parse error`: `invalid boolean value "maybe" for --yes: parse error`,
	} {
		if got := flagError(fmt.Errorf("%s", in)); got != want {
			t.Errorf("flagError(%q) = %q, want %q", in, got, want)
		}
	}
}

// Command lines that are wrong are told so at once, with exit 2 and a
// message that says what was wanted, before any call to DynamoDB (the
// endpoint here refuses every connection, so a command that called it
// would end with exit 1 instead).
func TestUsageErrorsBeforeAnyCall(t *testing.T) {
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_ACCESS_KEY_ID", "herdlock")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "herdlock")
	t.Setenv("AWS_CONFIG_FILE", os.DevNull)
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", os.DevNull)
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	conn := []string{"--table", "locks", "--endpoint-url", "http://127.0.0.1:1"}
	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantStdout string
		wantStderr string
	}{
		{"help of an unknown command", []string{"help", "nosuch"}, exitUsage, "", `unknown command "nosuch"`},
		{"version after a command", append([]string{"get", "--version"}, conn...), exitOK, "herdlock ", ""},
		{"version before other flags", []string{"--version", "--output", "json"}, exitOK, "herdlock ", ""},
		{"a duration without a unit", append([]string{"watch", "--interval", "5", "fx", "A"}, conn...), exitUsage, "", `want a duration with a unit, such as 1s or 200ms, got "5"`},
		{"a malformed revision", append([]string{"release", "--revision", "rev-1", "--yes", "fx", "A"}, conn...), exitUsage, "", "want 32 lower-case hex digits"},
		{"an upper-case revision", append([]string{"release", "--revision", "0123456789ABCDEF0123456789ABCDEF", "--yes", "fx", "A"}, conn...), exitUsage, "", "want 32 lower-case hex digits"},
		{"the removed --json", append([]string{"get", "--json", "fx", "A"}, conn...), exitUsage, "", "flag provided but not defined: --json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := run(t.Context(), tt.args, &env{
				stdin: strings.NewReader(""), stdout: &out, stderr: &errOut,
				getenv: func(string) string { return "" }, now: time.Now,
			})
			if code != tt.wantCode || !strings.Contains(out.String(), tt.wantStdout) || !strings.Contains(errOut.String(), tt.wantStderr) {
				t.Errorf("herdlock %s: exit %d, stdout %q, stderr %q; want exit %d, stdout with %q, stderr with %q",
					strings.Join(tt.args, " "), code, out.String(), errOut.String(), tt.wantCode, tt.wantStdout, tt.wantStderr)
			}
		})
	}
}

// Text and JSON name an item's fields alike: the holder and its renewals.
func TestTextAndJSONNameFieldsAlike(t *testing.T) {
	now := time.Now()
	v := newView(storeapi.Item{Key: lockcore.Key{Group: "g", ID: "i"}, Holder: "stream/req-1", Revision: "r", Fence: 3, Beat: 4,
		LeaseUntilMs: now.Add(time.Minute).UnixMilli(), ExpiresAtMs: now.Add(time.Hour).UnixMilli()}, now)
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var fields map[string]any
	if err := json.Unmarshal(b, &fields); err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	if err := v.writeDetail(&text, now); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"holder", "renewals"} {
		if _, ok := fields[name]; !ok {
			t.Errorf("JSON %s lacks %q", b, name)
		}
		if !strings.Contains(text.String(), name) {
			t.Errorf("text lacks %q:\n%s", name, text.String())
		}
	}
	for _, name := range []string{"owner", "beat"} {
		if _, ok := fields[name]; ok {
			t.Errorf("JSON %s has %q, which the text calls otherwise", b, name)
		}
	}
}
