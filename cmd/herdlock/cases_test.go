package main

import (
	"bufio"
	"encoding/json"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/lockcore/storeapi"
)

// testJSONOutput runs every command with --output json and decodes what it
// printed.
func testJSONOutput(t *testing.T, c *cli, store *lockcore.DynamoStore) {
	var cr created
	r := c.want(exitOK, []string{"create-table", "--output", "json"})
	if err := json.Unmarshal([]byte(r.stdout), &cr); err != nil || cr.Table != c.table || cr.Status != "ACTIVE" ||
		cr.PartitionKey != storeapi.AttrLockKey || cr.TTL != ttlEnabling {
		t.Errorf("create-table --output json = %+v, %v; want %s ACTIVE, key %s, TTL %s (Dynoxide has UpdateTimeToLive):\n%s",
			cr, err, c.table, storeapi.AttrLockKey, ttlEnabling, r.stdout)
	}
	var cfn struct {
		Resources struct {
			LockTable struct {
				Type       string
				Properties struct{ TableName string }
			}
		}
	}
	r = c.want(exitOK, []string{"create-table", "--print-cfn", "--output", "json", "--table", "locks-json"})
	if err := json.Unmarshal([]byte(r.stdout), &cfn); err != nil || cfn.Resources.LockTable.Type != "AWS::DynamoDB::Table" ||
		cfn.Resources.LockTable.Properties.TableName != "locks-json" {
		t.Errorf("create-table --print-cfn --output json = %+v, %v:\n%s", cfn, err, r.stdout)
	}

	// A lock as lockcore writes it: a 32-hex revision.
	key := lockcore.Key{Group: "fx", ID: "JSON"}
	rev := "0123456789abcdef0123456789abcdef"
	now := time.Now().UnixMilli()
	if _, err := store.Acquire(t.Context(), storeapi.AcquireRequest{Key: key, Holder: "j", Revision: rev,
		Lease: time.Minute, NowMs: now, LeaseUntilMs: now + 60_000, ExpiresAtMs: now + 120_000, FenceBase: 1}); err != nil {
		t.Fatal(err)
	}
	for _, flags := range [][]string{{"--output", "json"}, {"--output=json"}} {
		var v view
		r = c.want(exitOK, append([]string{"get", "fx", "JSON"}, flags...))
		if err := json.Unmarshal([]byte(r.stdout), &v); err != nil || v.Verdict != verdictHeld || v.Revision != rev {
			t.Errorf("get %v = %+v, %v; want held at %s", flags, v, err, rev)
		}
		var vs []view
		r = c.want(exitOK, append([]string{"list", "--group", "fx", "--held"}, flags...))
		if err := json.Unmarshal([]byte(r.stdout), &vs); err != nil || !slices.ContainsFunc(vs, func(v view) bool { return v.ID == "JSON" }) {
			t.Errorf("list --held %v = %+v, %v; want the held item JSON among them", flags, vs, err)
		}
	}

	var rel released
	r = c.want(exitOK, []string{"release", "fx", "JSON", "--revision", rev, "--yes", "--output", "json"})
	if err := json.Unmarshal([]byte(r.stdout), &rel); err != nil || rel.Action != actionReleased || rel.Revision != rev || rel.Fence != 2 {
		t.Errorf("release --output json = %+v, %v; want released at %s, fence 2:\n%s", rel, err, rev, r.stdout)
	}
	r = c.want(exitOK, []string{"release", "fx", "JSON", "--revision", rev, "--yes", "--output", "json"})
	if err := json.Unmarshal([]byte(r.stdout), &rel); err != nil || rel.Action != actionNothingToDo {
		t.Errorf("second release --output json = %+v, %v; want %s", rel, err, actionNothingToDo)
	}

	cmd := c.command("", "watch", "--interval", "20ms", "--output", "json", "fx", "JSON")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	var wl watchLine
	if jerr := json.Unmarshal([]byte(line), &wl); err != nil || jerr != nil || wl.At.IsZero() || wl.Verdict != verdictReleasedFailed || wl.Revision != rev {
		t.Errorf("watch --output json first line = %q (%v, %v); want the released item with its time", line, err, jerr)
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("watch --output json after SIGINT: %v, want exit 0", err)
	}

	c.want(exitUsage, []string{"get", "--output", "xml", "fx", "JSON"})
}

// testMissingTable runs every command that reads a table on one that does
// not exist, named by $HERDLOCK_TABLE or --table: a clear "table not found"
// and exit code 6, and list prints nothing that looks like an empty table.
func testMissingTable(t *testing.T, c *cli) {
	missing := []string{envTable + "=herdlock-missing"}
	for _, args := range [][]string{
		{"get", "fx", "HELD"},
		{"list"},
		{"list", "--output", "json"},
		{"release", "fx", "HELD", "--revision", "0123456789abcdef0123456789abcdef", "--yes"},
		{"watch", "--interval", "20ms", "fx", "HELD"},
	} {
		r := c.runEnv(missing, "", args...)
		if r.code != exitTableNotFound || !strings.Contains(r.stderr, `table "herdlock-missing" not found`) ||
			strings.Contains(r.stderr, "no lock items") || strings.TrimSpace(r.stdout) != "" {
			t.Errorf("herdlock %s on a missing table: exit %d, stdout %q, stderr %q; want exit %d, only \"table not found\" on stderr",
				strings.Join(args, " "), r.code, r.stdout, r.stderr, exitTableNotFound)
		}
	}
	// --table wins over $HERDLOCK_TABLE, both ways.
	if r := c.runEnv(missing, "", "get", "--table", c.table, "fx", "HELD"); r.code != exitOK {
		t.Errorf("get --table %s with $%s missing: exit %d, stderr %q; want 0", c.table, envTable, r.code, r.stderr)
	}
	if r := c.run("", "get", "--table", "herdlock-missing", "fx", "HELD"); r.code != exitTableNotFound {
		t.Errorf("get --table herdlock-missing: exit %d, stderr %q; want %d", r.code, r.stderr, exitTableNotFound)
	}
	if r := c.run("", "create-table", "--table", "one-table", "other-table"); r.code != exitUsage {
		t.Errorf("create-table with two different tables: exit %d, want %d", r.code, exitUsage)
	}
	out, err := exec.Command(c.bin, "--version").Output()
	if err != nil || !strings.HasPrefix(string(out), "herdlock ") || strings.Count(string(out), "\n") != 1 {
		t.Errorf("--version = %q, %v; want exit 0 and one version line", out, err)
	}
}
