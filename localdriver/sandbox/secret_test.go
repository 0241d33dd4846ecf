package sandbox_test

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/localdriver/sandbox"
)

// TestSecretFilesAreTheTenantsOnly gives a sandbox two secret files, one
// larger than a pipe's buffer and holding NUL bytes, one empty: the program
// reads them whole at /run/secrets/<name>, readable by its uid only (0400,
// its own; as root 0444, root's, in a sandbox where no other uid runs), on
// a read-only tmpfs it cannot change; no descriptor
// that fed them is left to it; and neither bwrap's command line nor the
// sandbox's state folder holds a byte of them.
func TestSecretFilesAreTheTenantsOnly(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := newSandbox(t, sandbox.Options{Dir: dir})
	value := make([]byte, 100<<10)
	if _, err := rand.Read(value); err != nil {
		t.Fatal(err)
	}
	value[10] = 0
	sum := sha256.Sum256(value)
	c, out := startWait(t, s, sandbox.Spec{Tenant: tenantA, Path: "/bin/sh", Dir: "/", Env: []string{"PATH=/usr/bin:/bin"},
		SecretFiles: map[string][]byte{"api-key": value, "empty": {}},
		Args: []string{"-c", `cd /run/secrets
echo "file $(stat -c '%a %u %g %s' api-key)"
echo "empty $(stat -c '%a %s' empty)"
echo "me $(id -u) $(id -g)"
echo "sum $(sha256sum api-key | cut -d' ' -f1)"
echo "ls $(ls -A | tr '\n' ' ')"
echo "dir $(stat -c '%a' .) $(grep ' /run/secrets ' /proc/self/mounts | cut -d' ' -f3,4 | cut -d, -f1)"
(echo x >> api-key) 2>/dev/null && echo "written" || echo "not written"
chmod 0666 api-key 2>/dev/null && echo "chmodded" || echo "not chmodded"
touch new 2>/dev/null && echo "created" || echo "not created"
echo "fds $(ls /proc/self/fd | sort -n | tr '\n' ' ')"`}})
	if code := c.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	lines := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		k, v, _ := strings.Cut(line, " ")
		lines[k] = v
	}
	me := strings.Fields(lines["me"])
	file := strings.Fields(lines["file"])
	if len(me) != 2 || len(file) != 4 {
		t.Fatalf("unexpected output:\n%s", out)
	}
	// A normal user's sandbox maps the program to the user, who owns what
	// bwrap makes; as root bwrap makes the files root's, readable by all
	// (the program has another uid), and only the program's uid is there.
	fileMode, dirMode, owner := "400", "500", me[0]
	if os.Geteuid() == 0 {
		fileMode, dirMode, owner = "444", "555", "0"
		if me[0] == "0" {
			t.Fatalf("the program runs as root:\n%s", out)
		}
	}
	if file[0] != fileMode || file[1] != owner || file[3] != "102400" {
		t.Errorf("api-key is %q (mode, owner, group, size) for a process of %q: want %s, owner %s, whole", file, me, fileMode, owner)
	}
	for k, want := range map[string]string{"empty": fileMode + " 0", "sum": hex.EncodeToString(sum[:]), "ls": "api-key empty ",
		"dir": dirMode + " tmpfs ro", "fds": "0 1 2 3"} {
		if lines[k] != want {
			t.Errorf("%s: %q, want %q", k, lines[k], want)
		}
	}
	for _, want := range []string{"not written", "not chmodded", "not created"} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("the program could change its secrets (want %q):\n%s", want, out)
		}
	}
	if bytes.Contains([]byte(strings.Join(c.Args, "\x00")), value[:32]) {
		t.Error("bwrap's command line holds the secret")
	}
	_ = filepath.WalkDir(dir, func(path string, e fs.DirEntry, err error) error {
		if err == nil && e.Type().IsRegular() {
			if data, err := os.ReadFile(path); err == nil && bytes.Contains(data, value[:32]) {
				t.Errorf("%s holds the secret", path)
			}
		}
		return nil
	})
}

// TestSecretFilesNeedASandbox: without one (ModeNone) there is no private
// file system to put them on, and a pooled sandbox is made before its
// tenant's secrets are known; either is refused, with no process started.
func TestSecretFilesNeedASandbox(t *testing.T) {
	t.Parallel()
	secrets := map[string][]byte{"api-key": []byte("x")}
	insecure := newSandbox(t, sandbox.Options{Insecure: true})
	_, err := insecure.Command(sandbox.Spec{Tenant: tenantA, Path: "/bin/true", Dir: "/", SecretFiles: secrets})
	if domain.ErrorCode(err) != domain.EINVALID {
		t.Errorf("ModeNone with secret files: %v, want EINVALID", err)
	}
	s := newSandbox(t, sandbox.Options{})
	_, err = s.Command(sandbox.Spec{Path: "/bin/true", Dir: "/", Unassigned: true, SecretFiles: secrets})
	if domain.ErrorCode(err) != domain.EINVALID {
		t.Errorf("an unassigned sandbox with secret files: %v, want EINVALID", err)
	}
	_, err = s.Command(sandbox.Spec{Tenant: tenantA, Path: "/bin/true", Dir: "/", SecretFiles: map[string][]byte{"../etc": nil}})
	if domain.ErrorCode(err) != domain.EINVALID {
		t.Errorf("a secret file named ../etc: %v, want EINVALID", err)
	}
}
