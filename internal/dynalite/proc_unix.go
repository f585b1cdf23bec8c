//go:build unix

package dynalite

import (
	"os/exec"
	"syscall"
)

// setProcessGroup puts the child in a process group of its own, so Close can
// kill whatever it started too.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

func killProcessGroup(cmd *exec.Cmd) {
	if cmd.Process == nil {
		return
	}
	// The group id is the child's pid (Setpgid with Pgid 0).
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	_ = cmd.Process.Kill()
}
