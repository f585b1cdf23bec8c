//go:build !unix

package proc

import "os/exec"

// SetProcessGroup does nothing where there are no process groups.
func SetProcessGroup(*exec.Cmd) {}

// KillProcessGroup kills the child and its process group.
func KillProcessGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = cmd.Process.Kill()
	}
}
