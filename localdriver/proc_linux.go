package localdriver

import "syscall"

// procAttr puts a function process in its own process group (stopping it
// stops its children) and kills it when the driver's process dies, so that
// a crashed control plane leaves no function running.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
