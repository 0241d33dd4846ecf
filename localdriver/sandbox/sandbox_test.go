package sandbox_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/slessio/sless/localdriver/sandbox"
)

const tenantA, tenantB = "sless-00000000000000aa", "sless-00000000000000bb"

func newSandbox(t *testing.T, opts sandbox.Options) *sandbox.Sandbox {
	t.Helper()
	if opts.Dir == "" {
		opts.Dir = t.TempDir()
	}
	s, err := sandbox.New(opts)
	if err != nil {
		t.Fatalf("sandbox.New: %v (install bubblewrap: apt-get install bubblewrap)", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// run runs a shell script in a sandbox of tenant with dir bound read-only at
// /app and returns its output and exit status.
func run(t *testing.T, s *sandbox.Sandbox, tenant, dir, script string) (string, int) {
	t.Helper()
	spec := sandbox.Spec{Tenant: tenant, Path: "/bin/sh", Args: []string{"-c", script}, Dir: dir,
		Env: []string{"PATH=/usr/bin:/bin", "OWN=visible"}}
	if dir != "" {
		spec.Binds = []sandbox.Bind{{Source: dir, Dest: "/app"}}
	}
	return runSpec(t, s, spec)
}

func TestSandboxedProcessSeesOnlyItsOwn(t *testing.T) {
	s := newSandbox(t, sandbox.Options{})
	if s.Mode() != sandbox.ModeBubblewrap {
		t.Fatalf("mode = %s", s.Mode())
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "code.txt"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SLESS_PLATFORM_CANARY", "platform-secret")
	out, code := run(t, s, tenantA, dir, `
pwd
cat code.txt; echo
id -u
grep -E '^(CapEff|NoNewPrivs)' /proc/self/status
cat /proc/1/environ >/dev/null 2>&1 && echo "environ readable: $(tr '\0' ' ' </proc/1/environ)" || echo "environ denied"
tr '\0' ' ' </proc/1/cmdline; echo
ls /proc | grep -cE '^[0-9]+$'
touch /app/x 2>/dev/null && echo "app writable" || echo "app read-only"
touch /usr/x 2>/dev/null && echo "usr writable" || echo "usr read-only"
touch /tmp/x && echo "tmp writable"
echo "own=$OWN canary=$SLESS_PLATFORM_CANARY"
`)
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	for _, want := range []string{"/app\n", "mine\n", "CapEff:\t0000000000000000", "NoNewPrivs:\t1", "app read-only",
		"usr read-only", "tmp writable", "own=visible canary=\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
	if strings.Contains(out, dir) || strings.Contains(out, "platform-secret") {
		t.Errorf("the sandbox saw a host path or the platform's environment:\n%s", out)
	}
	if os.Geteuid() == 0 {
		if strings.Contains(out, "\n0\n") || !strings.Contains(out, "environ denied") {
			t.Errorf("as root the sandbox must run as the tenant's uid and not read its init's environment:\n%s", out)
		}
	}
}

func TestTenantsGetTheirOwnUIDs(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("per-tenant uids are given when the platform runs as root; this run is not root")
	}
	dir := t.TempDir()
	s := newSandbox(t, sandbox.Options{Dir: dir})
	uid := func(s *sandbox.Sandbox, tenant string) int {
		u, _, err := s.Owner(tenant)
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	a, b := uid(s, tenantA), uid(s, tenantB)
	if a == b || a < sandbox.DefaultUIDBase || b < sandbox.DefaultUIDBase {
		t.Fatalf("uids %d and %d", a, b)
	}
	out, _ := run(t, s, tenantB, "", "id -u")
	if strings.TrimSpace(out) != strconv.Itoa(b) {
		t.Fatalf("tenant B runs as %q, want %d", out, b)
	}
	// Another process on the same data dir finds the same uids.
	again := newSandbox(t, sandbox.Options{Dir: dir})
	if uid(again, tenantB) != b || uid(again, tenantA) != a {
		t.Fatal("uids changed across sandboxes of one data dir")
	}
	home, err := s.TenantHome(tenantA)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(home)
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("home %s: %v %v", home, fi.Mode(), err)
	}
}

func TestProcessLimitStopsAForkBomb(t *testing.T) {
	t.Parallel()
	s := newSandbox(t, sandbox.Options{MaxProcs: 40})
	out, _ := run(t, s, tenantA, "", `n=0; while [ $n -lt 200 ]; do sleep 30 & if [ $? -ne 0 ]; then break; fi; n=$((n+1)); done; echo "started $n"`)
	if !strings.Contains(out, "fork") && !strings.Contains(out, "Resource temporarily unavailable") && !strings.Contains(out, "Cannot fork") {
		t.Fatalf("200 children were not refused:\n%s", out)
	}
}

func TestInsecureModeRunsPlainProcesses(t *testing.T) {
	t.Parallel()
	s := newSandbox(t, sandbox.Options{Insecure: true})
	dir := t.TempDir()
	out, code := run(t, s, tenantA, dir, "pwd")
	if code != 0 || strings.TrimSpace(out) != dir {
		t.Fatalf("ModeNone must run on host paths: %q (%d)", out, code)
	}
	if !strings.Contains(s.Describe(), "insecure") {
		t.Fatalf("Describe = %q", s.Describe())
	}
}

// TestAsNormalUser runs this package's sandbox tests again as an
// unprivileged user (nobody), the way a platform not run as root makes its
// sandboxes: the user namespace maps to that user. Run as root only (it
// switches users with setpriv); as a normal user the other tests already are
// this case.
func TestAsNormalUser(t *testing.T) {
	if os.Getenv("SANDBOX_TEST_AS_NOBODY") != "" {
		t.Skip("already running as the normal user")
	}
	if os.Geteuid() != 0 {
		t.Skip("not root: the other tests run as a normal user already")
	}
	dir, err := os.MkdirTemp("", "sandbox-as-nobody-") // t.TempDir's parent is private to root
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	exe, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "sandbox.test")
	if err := os.WriteFile(bin, exe, 0o755); err != nil {
		t.Fatal(err)
	}
	const nobody = "65534"
	cmd := exec.Command("setpriv", "--reuid="+nobody, "--regid="+nobody, "--clear-groups", "--",
		bin, "-test.run=^(TestSandboxedProcessSeesOnlyItsOwn|TestProcessLimitStopsAForkBomb|TestSecretFilesAreTheTenantsOnly)$", "-test.count=1", "-test.v")
	cmd.Dir = dir
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + dir, "TMPDIR=" + dir, "SANDBOX_TEST_AS_NOBODY=1"}
	out, err := cmd.CombinedOutput()
	if err != nil || strings.Count(string(out), "--- PASS") != 3 {
		t.Fatalf("the sandbox tests as uid %s: %v\n%s", nobody, err, out)
	}
}
