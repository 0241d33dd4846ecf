package pglocal

import (
	"os/exec"
	"syscall"
)

// setParentDeathSignal asks the kernel to fast-shutdown the server if this process
// dies without calling Stop, so a killed test run or dev session leaks no server.
func setParentDeathSignal(cmd *exec.Cmd) {
	cmd.SysProcAttr.Pdeathsig = syscall.SIGINT
}
