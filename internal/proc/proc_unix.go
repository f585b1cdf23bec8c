//go:build unix

package proc

import (
	"os/exec"
	"syscall"
)

// SetProcessGroup puts the child in a process group of its own, so that
// KillProcessGroup also stops whatever it started.
func SetProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// KillProcessGroup kills the child and its process group.
func KillProcessGroup(cmd *exec.Cmd) {
	if cmd.Process == nil {
		return
	}
	// The group id is the child's pid (Setpgid with Pgid 0).
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	_ = cmd.Process.Kill()
}
