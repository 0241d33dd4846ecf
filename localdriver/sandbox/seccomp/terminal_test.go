//go:build linux

package seccomp_test

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// runTIOCSTI types a character into its controlling terminal and prints
// "tiocsti" with the result.
func runTIOCSTI() {
	fd, err := unix.Open("/dev/tty", unix.O_RDWR, 0)
	if err != nil {
		fmt.Println("no terminal:", err)
		os.Exit(1)
	}
	c := byte('#')
	_, _, e := unix.RawSyscall(unix.SYS_IOCTL, uintptr(fd), unix.TIOCSTI, uintptr(unsafe.Pointer(&c)))
	fmt.Println("tiocsti", result(e))
}

// openPTY returns a new pseudo-terminal's master and its terminal.
func openPTY(t *testing.T) (master, tty *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return m, s
}

// TestTerminalInputCannotBeInjected starts a sandbox from a terminal
// without a session of its own, as `sless dev` in a shell would: under the
// filter, TIOCSTI cannot type into the terminal; without it (the control)
// it can, where the kernel still allows TIOCSTI at all.
func TestTerminalInputCannotBeInjected(t *testing.T) {
	t.Parallel()
	bwrapPath(t)
	filter := mustFilter(t)
	for _, as := range runners(t) {
		t.Run(as.name, func(t *testing.T) {
			t.Parallel()
			_, tty := openPTY(t)
			env := []string{probeEnv + "=tiocsti"}
			out, code := sandbox{as: as, filter: filter, env: env, tty: tty}.run(t, selfInSandbox)
			if code != 0 || !strings.Contains(out, "tiocsti EPERM") {
				t.Errorf("under the filter: exit %d, want tiocsti EPERM:\n%s", code, out)
			}
			_, tty = openPTY(t)
			out, code = sandbox{as: as, env: env, tty: tty}.run(t, selfInSandbox)
			if code != 0 || !strings.Contains(out, "tiocsti ") || strings.Contains(out, "tiocsti EPERM") {
				t.Errorf("without the filter (the control): exit %d, want anything but EPERM:\n%s", code, out)
			}
			t.Logf("without the filter: %s", strings.TrimSpace(out))
		})
	}
}
