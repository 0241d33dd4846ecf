//go:build unix && !linux

package localdriver

import "syscall"

// memoryEnforced reports whether limitMemory does anything on this system.
const memoryEnforced = false

// procAttr puts a function process in its own process group, so that
// stopping it stops its children. Only Linux can also kill it when the
// driver dies (Pdeathsig).
func procAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// limitMemory does nothing: prlimit(2) on another process is Linux only.
func limitMemory(int, uint64) error { return nil }
