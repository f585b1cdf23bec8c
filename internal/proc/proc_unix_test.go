//go:build linux

package proc

import (
	"bufio"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// alive reports whether pid is a running process (not gone, not a zombie).
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] != 'Z'
}

// A child that exited and was waited for leaves its orphans in its group,
// and KillProcessGroup still kills them: no process has the child's pid.
func TestKillProcessGroupKillsTheOrphansOfAnExitedChild(t *testing.T) {
	cmd := exec.Command("sh", "-c", "sleep 60 & echo $!")
	SetProcessGroup(cmd)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	orphan, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	_ = cmd.Wait()
	close(exited)
	if !alive(orphan) {
		t.Fatalf("the orphan %d is not running before the kill", orphan)
	}
	KillProcessGroup(cmd, exited)
	deadline := time.Now().Add(5 * time.Second)
	for alive(orphan) {
		if time.Now().After(deadline) {
			t.Fatalf("the orphan %d still runs after KillProcessGroup", orphan)
		}
		time.Sleep(10 * time.Millisecond) // the kernel delivers SIGKILL asynchronously
	}
}

// A pid that a process has now is not a group to kill once the child that
// had it was waited for: pidInUse tells.
func TestPidInUse(t *testing.T) {
	if !pidInUse(os.Getpid()) {
		t.Errorf("pidInUse(this process) = false")
	}
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	if pidInUse(cmd.Process.Pid) && alive(cmd.Process.Pid) {
		t.Skipf("pid %d was reused at once", cmd.Process.Pid)
	}
	if pidInUse(cmd.Process.Pid) {
		t.Errorf("pidInUse(%d), a child waited for, = true", cmd.Process.Pid)
	}
}
