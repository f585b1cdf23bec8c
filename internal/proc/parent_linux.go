//go:build linux

package proc

import (
	"os/exec"
	"syscall"
)

// KillWithParent asks the kernel to SIGKILL the child when the process that
// started it exits, however it exits, for a child (such as a native server)
// that has no standard-input watch of its own. Call it after
// [SetProcessGroup], which replaces cmd.SysProcAttr.
//
// The signal is tied to the OS thread that starts the child; Go exits a
// thread only when a goroutine locked to it returns, so do not start the
// child from such a goroutine.
func KillWithParent(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}
