package sandbox

import (
	"os"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/slessio/sless/domain"
)

// supported reports whether user namespaces can be made here (as root the
// sandbox's user namespace is made by its unprivileged program, so the same
// setting matters); the probe in New finds anything else.
func supported() error {
	if data, err := os.ReadFile("/proc/sys/user/max_user_namespaces"); err == nil && string(data) == "0\n" {
		return domain.Errorf(domain.EUNAVAILABLE, "no sandbox: user namespaces are disabled (sysctl user.max_user_namespaces=0)")
	}
	return nil
}

// setLimits sets RLIMIT_DATA (memory bytes) and RLIMIT_NPROC (nproc) of a
// process; zero leaves a limit as it is. Children inherit them.
func setLimits(pid int, memory, nproc uint64) error {
	if memory > 0 {
		if err := unix.Prlimit(pid, unix.RLIMIT_DATA, &unix.Rlimit{Cur: memory, Max: memory}, nil); err != nil {
			return err
		}
	}
	if nproc > 0 {
		return unix.Prlimit(pid, unix.RLIMIT_NPROC, &unix.Rlimit{Cur: nproc, Max: nproc}, nil)
	}
	return nil
}

// keepOwnDescriptors marks every descriptor of this process above stderr
// close-on-exec, so that a sandbox gets no descriptor the platform itself
// inherited (a terminal, a socket of whatever started it): only 0-2 and the
// files it is given (Spec.ExtraFiles, which exec places without the flag).
// Go opens its own descriptors close-on-exec already.
func keepOwnDescriptors() {
	if err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err == nil {
		return
	}
	entries, _ := os.ReadDir("/proc/self/fd") // before Linux 5.11
	for _, e := range entries {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd > 2 {
			unix.CloseOnExec(fd)
		}
	}
}
