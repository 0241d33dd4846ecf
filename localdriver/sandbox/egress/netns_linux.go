package egress

import (
	"fmt"
	"os"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

// inNamespace runs f on a thread that has joined the network namespace ns
// (files under /proc/sys/net are those of the opening thread's namespace).
func inNamespace(ns int, f func() error) error {
	runtime.LockOSThread()
	self, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		runtime.UnlockOSThread()
		return err
	}
	defer self.Close()
	if err := unix.Setns(ns, unix.CLONE_NEWNET); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("join the sandbox's network namespace: %w", err)
	}
	ferr := f()
	if err := unix.Setns(int(self.Fd()), unix.CLONE_NEWNET); err != nil {
		// The thread stays locked, so the runtime ends it with this goroutine.
		return fmt.Errorf("return to the platform's network namespace: %w", err)
	}
	runtime.UnlockOSThread()
	return ferr
}

// slirpAttr starts slirp4netns in a process group of its own that dies with
// the platform, in a mount namespace of its own whose mounts are all
// private (Go's unshare makes / MS_REC|MS_PRIVATE). slirp4netns's sandbox
// makes only / private in the namespace it creates, then detaches the old
// root: below a shared mount of the host (a kubelet's root folder is one)
// that detach would propagate, and unmount the host's own mounts there —
// a pod's secret volume, say.
func slirpAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, Unshareflags: syscall.CLONE_NEWNS}
}
