//go:build unix

package proc

import (
	"os"
	"os/exec"
	"strconv"
	"syscall"
)

// SetProcessGroup puts the child in a process group of its own, so that
// KillProcessGroup also stops whatever it started.
func SetProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// KillProcessGroup kills the child and its process group. exited is
// closed once the child has been waited for (cmd.Wait returned).
//
// The group's id is the child's pid (Setpgid with Pgid 0). Once the child
// has been waited for, that pid is free: if the group has no members left,
// the kernel may give it to another process, which may lead a group of its
// own (another test binary's server, on a machine whose pids wrap around
// at 32768), and a kill of the group would kill that one. So after the
// child was waited for, the group is killed only when no process has the
// pid: then only members of the child's group, its orphans, can carry it.
func KillProcessGroup(cmd *exec.Cmd, exited <-chan struct{}) {
	if cmd.Process == nil {
		return
	}
	pid := cmd.Process.Pid
	select {
	case <-exited:
		if pidInUse(pid) {
			return
		}
	default:
	}
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	_ = cmd.Process.Kill()
}

// pidInUse reports whether a process has pid now; where /proc is missing
// it says yes, so that nothing is killed that might not be ours.
func pidInUse(pid int) bool {
	if _, err := os.Stat("/proc/self"); err != nil {
		return true
	}
	_, err := os.Stat("/proc/" + strconv.Itoa(pid))
	return err == nil
}
