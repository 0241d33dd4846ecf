package localdriver

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// memoryEnforced reports whether limitMemory does anything on this system.
const memoryEnforced = true

// procAttr puts a function process in its own process group (stopping it
// stops its children) and kills it when the driver's process dies, so that
// a crashed control plane leaves no function running.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// limitMemory sets RLIMIT_DATA of a running process: the private writable
// memory it may map (heap, anonymous mmap, thread stacks). Unlike
// RLIMIT_AS it does not count the address space runtimes reserve without
// using it (Go reserves over 1 GiB, V8 more).
func limitMemory(pid int, bytes uint64) error {
	return unix.Prlimit(pid, unix.RLIMIT_DATA, &unix.Rlimit{Cur: bytes, Max: bytes}, nil)
}
