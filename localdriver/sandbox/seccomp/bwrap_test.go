//go:build linux

package seccomp_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/slessio/sless/localdriver/sandbox/seccomp"
)

// probeEnv selects what the test binary does when a test runs it in a
// sandbox: "calls" (the system call probes), "work" (a Go workload) or
// "tiocsti" (typing into its terminal).
const probeEnv = "SECCOMP_TEST_PROBE"

// selfInSandbox is where the sandbox sees the test binary: the host's copy
// may sit in a directory only root can enter.
const selfInSandbox = "/tmp/seccomp.test"

func TestMain(m *testing.M) {
	switch probe := os.Getenv(probeEnv); probe {
	case "":
		os.Exit(m.Run())
	case "calls":
		runCalls()
	case "work":
		runWork()
	case "tiocsti":
		runTIOCSTI()
	default:
		fmt.Fprintf(os.Stderr, "unknown %s=%q\n", probeEnv, probe)
		os.Exit(2)
	}
	os.Exit(0)
}

// runner is a user that programs run as in a sandbox.
type runner struct {
	name string
	// privileged: root with every capability (bwrap as root without a user
	// namespace), so the kernel itself refuses nothing and every call
	// reaches the filter.
	privileged bool
	userns     bool     // bwrap --unshare-user: the platform is not root
	prefix     []string // run before the program in the sandbox
}

// runners are the users to test as: as root, root itself and nobody (as the
// sandbox runs tenants as root: setpriv is bwrap's program); otherwise the
// caller in a user namespace of its own.
func runners(t *testing.T) []runner {
	t.Helper()
	if os.Geteuid() != 0 {
		return []runner{{name: "user", userns: true}}
	}
	setpriv := mustLookPath(t, "setpriv")
	return []runner{
		{name: "root", privileged: true},
		{name: "nobody", prefix: []string{setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "--no-new-privs", "--"}},
	}
}

// bwrapPath is bwrap's path; the tests that need it skip without it.
func bwrapPath(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("bwrap")
	if err != nil {
		t.Skip("bubblewrap is not installed (apt-get install bubblewrap): these tests run programs under the filter in bwrap")
	}
	return p
}

func mustLookPath(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s is needed: %v", name, err)
	}
	return p
}

func mustFilter(t *testing.T) []byte {
	t.Helper()
	b, err := seccomp.Filter()
	if err != nil {
		t.Fatalf("Filter: %v", err)
	}
	return b
}

// sandbox describes one sandboxed run.
type sandbox struct {
	as     runner
	filter []byte   // on fd 3 as --seccomp; nil: no filter (the control runs)
	reveal []string // host directories the program needs, bound at their own path
	env    []string // added to a minimal environment
	// tty, when set, is the program's stdin and controlling terminal, and
	// the sandbox keeps its session (no bwrap --new-session).
	tty *os.File
}

// run runs argv in a bwrap sandbox shaped like the local driver's, with no
// network but its own loopback, and returns its output and exit status.
func (s sandbox) run(t *testing.T, argv ...string) (string, int) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(self); err != nil || fi.Mode().Perm()&0o005 != 0o005 {
		t.Fatalf("the test binary %s must be readable and executable by others (umask?), for the runs as nobody: %v", self, err)
	}
	args := []string{"--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-net", "--die-with-parent",
		"--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev",
		"--perms", "1777", "--tmpfs", "/dev/shm", "--perms", "1777", "--tmpfs", "/tmp",
		"--ro-bind", self, selfInSandbox}
	if s.as.userns {
		args = append(args, "--unshare-user")
	}
	if s.tty == nil {
		args = append(args, "--new-session")
	}
	args = append(args, revealArgs(t, s.reveal)...)
	var extra []*os.File
	if s.filter != nil {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		// A filter is far smaller than a pipe's buffer.
		if _, err := w.Write(s.filter); err != nil {
			t.Fatal(err)
		}
		w.Close()
		extra = append(extra, r)
		args = append(args, "--seccomp", "3")
	}
	args = append(args, "--")
	args = append(args, s.as.prefix...)
	args = append(args, argv...)

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bwrapPath(t), args...)
	cmd.ExtraFiles = extra
	cmd.Env = append([]string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/tmp", "LANG=C.UTF-8"}, s.env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if s.tty != nil {
		cmd.Stdin = s.tty
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	}
	err = cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("%s timed out:\n%s", strings.Join(argv, " "), out.String())
	}
	if err != nil && cmd.ProcessState == nil {
		t.Fatalf("run bwrap: %v", err)
	}
	return out.String(), cmd.ProcessState.ExitCode()
}

// revealArgs binds each directory at its own path, and when one lies below
// a directory that others may not enter (a pyenv Python in /root), hides
// that directory behind a tmpfs with traversable parents made up to it.
func revealArgs(t *testing.T, dirs []string) []string {
	t.Helper()
	var args []string
	hidden := map[string]bool{}
	for _, dir := range dirs {
		var below []string // dir's ancestors below the one hidden, top first
		for a := filepath.Dir(dir); a != "/"; a = filepath.Dir(a) {
			fi, err := os.Stat(a)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Perm()&0o001 != 0 {
				below = append([]string{a}, below...)
				continue
			}
			if !hidden[a] {
				args = append(args, "--tmpfs", a)
				hidden[a] = true
			}
			for _, d := range below {
				args = append(args, "--perms", "0755", "--dir", d)
			}
			break
		}
		args = append(args, "--ro-bind", dir, dir)
	}
	return args
}

// python returns the real Python interpreter (not a pyenv shim) and its
// prefix, which a sandbox must see.
var python = sync.OnceValues(func() ([2]string, error) {
	out, err := exec.Command("python3", "-c", "import sys; print(sys.executable); print(sys.prefix)").Output()
	if err != nil {
		return [2]string{}, fmt.Errorf("python3: %v", err)
	}
	lines := strings.Fields(string(out))
	if len(lines) != 2 {
		return [2]string{}, fmt.Errorf("python3 said %q", out)
	}
	return [2]string{lines[0], lines[1]}, nil
})

func mustPython(t *testing.T) (exe, prefix string) {
	t.Helper()
	p, err := python()
	if err != nil {
		t.Fatalf("python3 is needed: %v", err)
	}
	return p[0], p[1]
}
