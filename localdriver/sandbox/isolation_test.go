package sandbox_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/slessio/sless/localdriver/sandbox"
	"github.com/slessio/sless/localdriver/sandbox/egress"
)

func TestSandboxHasANetworkOfItsOwn(t *testing.T) {
	t.Parallel()
	s := newSandbox(t, sandbox.Options{})
	// A service of the host on its loopback, which no sandbox may reach.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan struct{}, 10)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- struct{}{}
			c.Close()
		}
	}()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	script := `cat /etc/resolv.conf; grep -o '^ *[a-z0-9]*:' /proc/net/dev | tr -d ' :' | sort | tr '\n' ' '; echo
for host in 127.0.0.1 10.0.2.2; do
  if bash -c "echo > /dev/tcp/$host/` + port + `" 2>/dev/null; then echo "reached $host"; else echo "refused $host"; fi
done`
	for _, tc := range []struct {
		name    string
		network egress.Policy
		links   string
	}{
		{"nothing open", egress.Policy{}, "lo \n"},
		{"a function's", s.FunctionNetwork(), "lo tap0 \n"},
	} {
		out, code := runSpec(t, s, sandbox.Spec{Tenant: tenantA, Path: "/bin/sh", Args: []string{"-c", script}, Dir: "/",
			Env: []string{"PATH=/usr/bin:/bin"}, Network: tc.network})
		if code != 0 || !strings.Contains(out, "nameserver "+egress.Nameserver+"\n") || !strings.Contains(out, tc.links) ||
			!strings.Contains(out, "refused 127.0.0.1") || !strings.Contains(out, "refused 10.0.2.2") {
			t.Errorf("%s: exit %d:\n%s", tc.name, code, out)
		}
	}
	if len(accepted) > 0 {
		t.Errorf("the host's loopback was reached %d times", len(accepted))
	}
}

func TestSandboxGetsTheFilesItIsGiven(t *testing.T) {
	t.Parallel()
	s := newSandbox(t, sandbox.Options{})
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	go func() { _, _ = io.WriteString(w, "from the platform\n"); w.Close() }()
	out, code := runSpec(t, s, sandbox.Spec{Tenant: tenantA, Path: "/bin/sh", Args: []string{"-c", "cat <&3; ls /proc/self/fd | sort -n | tr '\\n' ' '"},
		Dir: "/", Env: []string{"PATH=/usr/bin:/bin"}, ExtraFiles: []*os.File{r}})
	r.Close()
	// 0-2, 3 (given), and ls's own directory: nothing of bwrap's.
	if code != 0 || out != "from the platform\n0 1 2 3 4 " {
		t.Fatalf("exit %d:\n%q", code, out)
	}
}

func TestSandboxCannotMakeNamespaces(t *testing.T) {
	t.Parallel()
	s := newSandbox(t, sandbox.Options{})
	out, code := run(t, s, tenantA, "", "unshare -r true && echo user-ns; unshare --net true && echo net-ns; unshare --mount true && echo mount-ns; echo done")
	if code != 0 || strings.Contains(out, "-ns") || !strings.Contains(out, "done") {
		t.Fatalf("a sandboxed process made a namespace (exit %d):\n%s", code, out)
	}
}

func TestSandboxMemoryIsForAllItsProcesses(t *testing.T) {
	t.Parallel()
	s := newSandbox(t, sandbox.Options{})
	if why := s.CgroupsWhy(); why != "" {
		t.Skipf("no cgroups here: %s", why)
	}
	py, prefix := realPython(t)
	// Five children of 30 MiB each under 64 MiB together.
	script := `import os, time
pids = []
for _ in range(5):
    pid = os.fork()
    if pid == 0:
        b = bytearray(30 << 20)
        b[::4096] = b"\x01" * len(range(0, len(b), 4096))
        time.sleep(2)
        os._exit(0)
    pids.append(pid)
print(sum(1 for p in pids if os.WIFSIGNALED(os.waitpid(p, 0)[1])), "killed")
`
	c, out := startWait(t, s, sandbox.Spec{Tenant: tenantA, Path: py, Args: []string{"-c", script}, Dir: "/", Env: []string{"PATH=/usr/bin:/bin"},
		Roots: []string{prefix}, MemoryBytes: 64 << 20})
	killed, _ := strconv.Atoi(strings.Fields(out + " 0")[0])
	if killed < 3 || !c.OOMKilled() {
		t.Fatalf("5 × 30 MiB under 64 MiB: %q, OOMKilled %v; want at least 3 killed", out, c.OOMKilled())
	}
}

func TestUIDRangesAreUniqueOnTheHost(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("per-tenant uids are given when the platform runs as root; this run is not root")
	}
	registry := filepath.Join(t.TempDir(), "uid-ranges.json")
	uid := func(dir string) int {
		s := newSandbox(t, sandbox.Options{Dir: dir, Registry: registry})
		u, _, err := s.Owner(tenantA)
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	one, two := filepath.Join(t.TempDir(), "one"), filepath.Join(t.TempDir(), "two")
	a1, a2 := uid(one), uid(two)
	if a1 == a2 || a1 < sandbox.DefaultUIDBase || a2 < sandbox.DefaultUIDBase || abs(a1-a2) < sandbox.UIDsPerDir {
		t.Fatalf("tenant A of two data dirs got uids %d and %d: want ranges apart", a1, a2)
	}
	if again := uid(one); again != a1 {
		t.Fatalf("the same data dir gave tenant A %d, then %d", a1, again)
	}
	// A data dir that is gone gives its range back.
	if err := os.RemoveAll(one); err != nil {
		t.Fatal(err)
	}
	if three := uid(filepath.Join(t.TempDir(), "three")); three != a1 {
		t.Errorf("a new data dir got %d; want the free range of the removed one (%d)", three, a1)
	}

	// A data dir of an older version numbered its tenants from the base,
	// where another dir's range now is: its tenant moves into its own range,
	// with its home.
	old := filepath.Join(t.TempDir(), "old")
	home := filepath.Join(old, "homes", strconv.Itoa(a2))
	if err := os.MkdirAll(filepath.Join(home, "cache"), 0o700); err != nil {
		t.Fatal(err)
	}
	table, _ := json.Marshal(map[string]int{tenantA: a2})
	if err := os.WriteFile(filepath.Join(old, "uids.json"), table, 0o600); err != nil {
		t.Fatal(err)
	}
	moved := uid(old)
	if moved == a2 || moved < sandbox.DefaultUIDBase {
		t.Fatalf("the old data dir's tenant kept uid %d, which another data dir's range holds", moved)
	}
	fi, err := os.Stat(filepath.Join(old, "homes", strconv.Itoa(moved), "cache"))
	if err != nil || statUID(fi) != moved {
		t.Fatalf("the tenant's home did not move to uid %d: %v", moved, err)
	}
}

// runSpec runs spec in s and returns its output and exit status.
func runSpec(t *testing.T, s *sandbox.Sandbox, spec sandbox.Spec) (string, int) {
	t.Helper()
	c, out := startWait(t, s, spec)
	return out, c.ProcessState.ExitCode()
}

// startWait runs spec in s until it exits and returns it and its output.
func startWait(t *testing.T, s *sandbox.Sandbox, spec sandbox.Spec) (*sandbox.Cmd, string) {
	t.Helper()
	c, err := s.Command(spec)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	c.Stdout, c.Stderr = &out, &out
	if err := c.Start(); err != nil {
		t.Fatalf("start: %v", err)
	}
	_ = c.Wait()
	return c, out.String()
}

// realPython returns the machine's python3 interpreter (not a pyenv shim)
// and its prefix, for a sandbox to bind.
func realPython(t *testing.T) (string, string) {
	t.Helper()
	out, err := exec.Command("python3", "-c", "import sys; print(sys.executable); print(sys.base_prefix)").Output()
	if err != nil {
		t.Fatalf("python3: %v", err)
	}
	lines := strings.Fields(string(out))
	return lines[0], lines[1]
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

func statUID(fi os.FileInfo) int { return int(fi.Sys().(*syscall.Stat_t).Uid) }
