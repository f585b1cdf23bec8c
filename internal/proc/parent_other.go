//go:build !linux

package proc

import "os/exec"

// KillWithParent does nothing where the kernel has no parent-death signal:
// there a child outlives a parent that dies without closing it.
func KillWithParent(*exec.Cmd) {}
