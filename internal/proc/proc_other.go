//go:build !unix

package proc

import "os/exec"

// SetProcessGroup does nothing where there are no process groups.
func SetProcessGroup(*exec.Cmd) {}

// KillProcessGroup kills the child. exited is closed once the child has
// been waited for.
func KillProcessGroup(cmd *exec.Cmd, exited <-chan struct{}) {
	select {
	case <-exited:
		return
	default:
	}
	if cmd.Process != nil {
		_ = cmd.Process.Kill()
	}
}
