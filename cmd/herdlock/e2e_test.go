package main

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/herdlock/herdlock/internal/dynalite"
	"github.com/herdlock/herdlock/internal/dynoxide/dynoxidetest"
	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/lockcore/storeapi"
)

// cli runs the built herdlock binary against one Dynoxide table.
type cli struct {
	t        *testing.T
	bin      string
	endpoint string
	table    string
}

type result struct {
	code           int
	stdout, stderr string
}

func (c *cli) env() []string {
	return append(os.Environ(),
		"AWS_REGION=us-east-1", "AWS_ACCESS_KEY_ID=herdlock", "AWS_SECRET_ACCESS_KEY=herdlock",
		"AWS_SESSION_TOKEN=", "AWS_PROFILE=", "AWS_CONFIG_FILE="+os.DevNull,
		"AWS_SHARED_CREDENTIALS_FILE="+os.DevNull, "AWS_EC2_METADATA_DISABLED=true",
		envTable+"="+c.table)
}

func (c *cli) command(stdin string, args ...string) *exec.Cmd {
	return c.commandEnv(nil, stdin, args...)
}

// commandEnv is command with extra environment variables, which override
// those of env.
func (c *cli) commandEnv(extra []string, stdin string, args ...string) *exec.Cmd {
	cmd := exec.Command(c.bin, append(args, "--endpoint-url", c.endpoint)...)
	cmd.Env = append(c.env(), extra...)
	cmd.Stdin = strings.NewReader(stdin)
	return cmd
}

func (c *cli) run(stdin string, args ...string) result {
	c.t.Helper()
	return c.runEnv(nil, stdin, args...)
}

func (c *cli) runEnv(extra []string, stdin string, args ...string) result {
	c.t.Helper()
	cmd := c.commandEnv(extra, stdin, args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		c.t.Fatalf("herdlock %v: %v", args, err)
	}
	return result{cmd.ProcessState.ExitCode(), out.String(), errOut.String()}
}

// want runs args and checks the exit code and that stdout holds each of
// the given texts.
func (c *cli) want(code int, args []string, texts ...string) result {
	c.t.Helper()
	r := c.run("", args...)
	if r.code != code {
		c.t.Errorf("herdlock %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.code, code, r.stdout, r.stderr)
	}
	for _, s := range texts {
		if !strings.Contains(r.stdout, s) {
			c.t.Errorf("herdlock %s: stdout lacks %q:\n%s", strings.Join(args, " "), s, r.stdout)
		}
	}
	return r
}

// revisionOf is a revision in the shape lockcore writes (32 lower-case hex
// digits), the same for the same name.
func revisionOf(name string) string {
	sum := sha256.Sum256([]byte(name))
	return hex.EncodeToString(sum[:16])
}

func buildCLI(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "herdlock")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// fixture writes the four kinds of item the CLI must tell apart.
type fixture struct {
	store                                       *lockcore.DynamoStore
	held, success, failure, abandoned, heldBack storeapi.Item
}

func writeFixture(t *testing.T, store *lockcore.DynamoStore) fixture {
	t.Helper()
	ctx := t.Context()
	now := time.Now().UnixMilli()
	acquire := func(id string, leaseUntil, expires int64) storeapi.Item {
		it, err := store.Acquire(ctx, storeapi.AcquireRequest{
			Key: lockcore.Key{Group: "fx", ID: id}, Holder: "stream/req-" + id, Revision: revisionOf(id),
			Lease: 6 * time.Second, NowMs: now, LeaseUntilMs: leaseUntil, ExpiresAtMs: expires,
			RecordAccount: "act:123456789012/app:1", FenceBase: 100,
		})
		if err != nil {
			t.Fatalf("Acquire(%s) = %v", id, err)
		}
		return it
	}
	release := func(it storeapi.Item, r lockcore.Result) storeapi.Item {
		req := storeapi.ReleaseRequest{Key: it.Key, Revision: it.Revision, NowMs: now, Result: r, ResultRef: "cache/" + it.Key.ID}
		if it.Key.ID == "HELDBACK" {
			// The upstream said: retry in ten minutes; second failure.
			req.Failures, req.FailReason = 2, "upstream_429"
			req.NotBeforeMs, req.FailRecentUntilMs = now+10*60_000, now+20*60_000
		}
		out, err := store.Release(ctx, req)
		if err != nil {
			t.Fatalf("Release(%s) = %v", it.Key.ID, err)
		}
		return out
	}
	return fixture{
		store:     store,
		held:      acquire("HELD", now+10*60_000, now+20*60_000),
		success:   release(acquire("OK", now+60_000, now+60_000), lockcore.Success),
		failure:   release(acquire("FAILED", now+60_000, now+60_000), lockcore.Failure),
		abandoned: acquire("ABANDONED", now-10_000, now+60_000),
		heldBack:  release(acquire("HELDBACK", now+60_000, now+60_000), lockcore.Failure),
	}
}

func TestCLI(t *testing.T) {
	bin := buildCLI(t)
	db := dynoxidetest.Start(t)
	c := &cli{t: t, bin: bin, endpoint: db.Endpoint(), table: "herdlock-cli"}

	// The table from $HERDLOCK_TABLE, as the help says; then --table and
	// the argument on the existing table, which is fine.
	c.want(exitOK, []string{"create-table"}, "table herdlock-cli is active")
	c.want(exitOK, []string{"create-table", "--table", c.table}, "table herdlock-cli is active")
	c.want(exitOK, []string{"create-table", c.table}, "is active")
	client := dynalite.NewClient(db.Endpoint())
	out, err := client.DescribeTable(t.Context(), describe(c.table))
	if err != nil {
		t.Fatalf("DescribeTable() = %v", err)
	}
	if ks := out.Table.KeySchema; len(ks) != 1 || *ks[0].AttributeName != storeapi.AttrLockKey || ks[0].KeyType != "HASH" {
		t.Errorf("created key schema = %+v, want one HASH key %s", ks, storeapi.AttrLockKey)
	}
	store, err := lockcore.NewDynamoStore(client, c.table)
	if err != nil {
		t.Fatal(err)
	}
	fx := writeFixture(t, store)

	t.Run("get", func(t *testing.T) {
		c.t = t
		c.want(exitOK, []string{"get", "fx", "HELD"}, "verdict:", "held by stream/req-HELD", "lease in ", "revision:", revisionOf("HELD"), "fence:", "101", "act:123456789012/app:1")
		c.want(exitOK, []string{"get", "fx", "OK"}, "released with success", "cache/OK")
		c.want(exitOK, []string{"get", "fx", "FAILED"}, "released with failure")
		c.want(exitOK, []string{"get", "fx", "HELDBACK"}, "2 failed attempts, reason upstream_429, no take-over in 9 min", "failure recent until:")
		// The fixture's lease lapsed 10 s before it was written; a loaded
		// machine may take a few seconds more to get here.
		r := c.want(exitOK, []string{"get", "fx", "ABANDONED"}, "abandoned by stream/req-ABANDONED", "lease lapsed ")
		if m := regexp.MustCompile(`lease lapsed (\d+) s ago`).FindStringSubmatch(r.stdout); m == nil || len(m[1]) != 2 || m[1] < "10" || m[1] > "39" {
			t.Errorf("get fx ABANDONED: %q, want the lease lapsed 10 to 39 s ago", m)
		}
		c.want(exitNotFound, []string{"get", "fx", "NOPE"}, "absent")
		r = c.want(exitOK, []string{"get", "--output", "json", "fx", "ABANDONED"})
		var v view
		if err := json.Unmarshal([]byte(r.stdout), &v); err != nil || v.Verdict != verdictAbandoned || v.Revision != revisionOf("ABANDONED") || v.Holder != "stream/req-ABANDONED" {
			t.Errorf("get --output json = %+v, %v; want the abandoned item", v, err)
		}
	})

	t.Run("list", func(t *testing.T) {
		c.t = t
		all := c.want(exitOK, []string{"list"}, "GROUP", "HELD", "OK", "FAILED", "ABANDONED", "HELDBACK")
		if n := strings.Count(all.stdout, "\n"); n != 6 {
			t.Errorf("list printed %d lines, want a header and 5 items:\n%s", n, all.stdout)
		}
		held := c.want(exitOK, []string{"list", "--held"}, "HELD")
		abandoned := c.want(exitOK, []string{"list", "--abandoned"}, "ABANDONED")
		for _, r := range []result{held, abandoned} {
			if n := strings.Count(r.stdout, "\n"); n != 2 {
				t.Errorf("list filtered printed %d lines, want a header and 1 item:\n%s", n, r.stdout)
			}
		}
		r := c.want(exitOK, []string{"list", "--output", "json", "--group", "fx"})
		var vs []view
		if err := json.Unmarshal([]byte(r.stdout), &vs); err != nil || len(vs) != 5 {
			t.Errorf("list --output json = %d items, %v; want 5:\n%s", len(vs), err, r.stdout)
		}
		r = c.want(exitOK, []string{"list", "--output", "json", "--group", "other"})
		if strings.TrimSpace(r.stdout) != "[]" {
			t.Errorf("list --output json --group other = %q, want []", r.stdout)
		}
		c.want(exitUsage, []string{"list", "--held", "--abandoned"})
	})

	t.Run("release", func(t *testing.T) {
		c.t = t
		// A revision the item never carried is told as such, not as a
		// take-over.
		old := revisionOf("OLD")
		r := c.want(exitRefused, []string{"release", "fx", "HELD", "--revision", old, "--yes"})
		if !strings.Contains(r.stderr, `revision "`+old+`" is not this item's`) || !strings.Contains(r.stderr, "mistyped") ||
			strings.Contains(r.stderr, "another holder") {
			t.Errorf("release at an unknown revision: stderr = %q, want it called not this item's, maybe mistyped", r.stderr)
		}
		if it, _, _ := store.Get(t.Context(), fx.held.Key); it.Released || it.Revision != fx.held.Revision {
			t.Errorf("after a refused release the item = %+v, want it held by %s", it, fx.held.Revision)
		}
		c.want(exitRefused, []string{"release", "fx", "OK", "--revision", fx.success.Revision, "--yes"})
		c.want(exitNotFound, []string{"release", "fx", "NOPE", "--revision", old, "--yes"})
		c.want(exitUsage, []string{"release", "fx", "HELD"})

		if r := c.run("n\n", "release", "fx", "HELD", "--revision", fx.held.Revision); r.code != exitNotConfirmed {
			t.Errorf("release answered n: exit %d, want %d; stderr %s", r.code, exitNotConfirmed, r.stderr)
		}
		if r := c.run("y\n", "release", "fx", "HELD", "--revision", fx.held.Revision); r.code != exitOK || !strings.Contains(r.stdout, "released with failure") {
			t.Errorf("release answered y: exit %d, stdout %q, stderr %q; want 0 and released", r.code, r.stdout, r.stderr)
		}
		it, _, err := store.Get(t.Context(), fx.held.Key)
		if err != nil || !it.Released || it.Result != lockcore.Failure || it.Revision != fx.held.Revision {
			t.Errorf("after release the item = %+v, %v; want released with failure at %s", it, err, fx.held.Revision)
		}
		c.want(exitOK, []string{"release", "fx", "HELD", "--revision", fx.held.Revision, "--yes"}, "already released")
		c.want(exitOK, []string{"release", "fx", "ABANDONED", "--revision", fx.abandoned.Revision, "--yes"}, "released with failure")
		c.want(exitOK, []string{"release", "fx", "FAILED", "--revision", fx.failure.Revision, "--yes"}, "nothing to do")

		// A recent failure holds take-overs back; release clears that.
		next := func() error {
			now := time.Now().UnixMilli()
			_, err := store.Acquire(t.Context(), storeapi.AcquireRequest{Key: fx.heldBack.Key, Holder: "next", Revision: revisionOf("next"),
				Lease: time.Second, NowMs: now, LeaseUntilMs: now + 1000, ExpiresAtMs: now + 1000, MaxAttempts: 2})
			return err
		}
		if err := next(); !errors.Is(err, storeapi.ErrConditionFailed) {
			t.Errorf("Acquire of the held-back item = %v, want a failed condition", err)
		}
		c.want(exitOK, []string{"release", "fx", "HELDBACK", "--revision", fx.heldBack.Revision, "--yes"}, "released with failure")
		it, _, err = store.Get(t.Context(), fx.heldBack.Key)
		if err != nil || it.FailRecentUntilMs != 0 || it.NotBeforeMs != 0 || it.FailReason != operatorReason || it.Failures != 2 {
			t.Errorf("after clearing the hold-back the item = %+v, %v; want no recent failure, reason %s, 2 failures", it, err, operatorReason)
		}
		if err := next(); err != nil {
			t.Errorf("Acquire after clearing the hold-back = %v, want the lock", err)
		}
		// The previous revision's release is recognised, and refused as stale.
		r = c.want(exitRefused, []string{"release", "fx", "HELDBACK", "--revision", fx.heldBack.Revision, "--yes"})
		if !strings.Contains(r.stderr, "is stale: another holder acquired the lock since") || !strings.Contains(r.stderr, revisionOf("next")) {
			t.Errorf("release at the previous holder's revision: stderr = %q, want it called stale, now at %s", r.stderr, revisionOf("next"))
		}
	})

	t.Run("watch", func(t *testing.T) {
		c.t = t
		testWatch(t, c, store)
	})

	t.Run("output json", func(t *testing.T) {
		c.t = t
		testJSONOutput(t, c, store)
	})

	t.Run("missing table", func(t *testing.T) {
		c.t = t
		testMissingTable(t, c)
	})

	t.Run("usage", func(t *testing.T) {
		c.t = t
		c.want(exitUsage, []string{"frobnicate"})
		c.want(exitUsage, []string{"get", "fx"})
		c.want(exitUsage, []string{"get", "--no-such-flag", "fx", "HELD"})
		c.want(exitOK, []string{"get", "--help"}, "Example:", "herdlock get")
		for _, cmd := range commands {
			c.want(exitOK, []string{"help", cmd.name}, "Example:\n  herdlock "+cmd.name)
		}
	})
}

// testWatch starts watch on an absent key, creates, renews and releases the
// item, and expects a line for each change, then stops watch with SIGINT.
func testWatch(t *testing.T, c *cli, store *lockcore.DynamoStore) {
	cmd := c.command("", "watch", "--interval", "20ms", "fx", "WATCHED")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	next := func(want string) {
		t.Helper()
		select {
		case l, ok := <-lines:
			if !ok || !strings.Contains(l, want) {
				t.Fatalf("watch line = %q (open %t), want one with %q; stderr %s", l, ok, want, stderr.String())
			}
		case <-time.After(60 * time.Second):
			t.Fatalf("no watch line with %q within 60 s", want)
		}
	}
	next(verdictAbsent)
	key := lockcore.Key{Group: "fx", ID: "WATCHED"}
	now := time.Now().UnixMilli()
	it, err := store.Acquire(t.Context(), storeapi.AcquireRequest{Key: key, Holder: "w", Revision: revisionOf("w"),
		Lease: time.Minute, NowMs: now, LeaseUntilMs: now + 60_000, ExpiresAtMs: now + 120_000, FenceBase: 1})
	if err != nil {
		t.Fatal(err)
	}
	next("held by w")
	if _, err := store.Renew(t.Context(), storeapi.RenewRequest{Key: key, Revision: it.Revision, NowMs: now, LeaseUntilMs: now + 60_000}); err != nil {
		t.Fatal(err)
	}
	next("renewals 1")
	if _, err := store.Release(t.Context(), storeapi.ReleaseRequest{Key: key, Revision: it.Revision, NowMs: now, Result: lockcore.Success}); err != nil {
		t.Fatal(err)
	}
	next(verdictReleasedOK)
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	for range lines {
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("watch after SIGINT: %v, want exit 0; stderr %s", err, stderr.String())
	}
}

func describe(table string) *dynamodb.DescribeTableInput {
	return &dynamodb.DescribeTableInput{TableName: aws.String(table)}
}
