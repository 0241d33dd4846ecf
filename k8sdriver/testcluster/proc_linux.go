package testcluster

import "syscall"

// sysProcAttr kills the child when the test binary dies, so a crashed test
// leaves no apiserver behind.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
}
