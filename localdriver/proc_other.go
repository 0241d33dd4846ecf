//go:build unix && !linux

package localdriver

import "syscall"

// procAttr puts a function process in its own process group, so that
// stopping it stops its children. Only Linux can also kill it when the
// driver dies (Pdeathsig).
func procAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
