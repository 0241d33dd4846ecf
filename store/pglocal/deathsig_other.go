//go:build !linux

package pglocal

import "os/exec"

// setParentDeathSignal does nothing where the kernel has no parent-death signal;
// a server left behind is stopped by the next Start on the same directory.
func setParentDeathSignal(*exec.Cmd) {}
