package pglocal

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/slessio/sless/domain"
)

// tenantUID is a uid of the range function processes run as.
const tenantUID = 1_000_000_123

// osUser is an account of the machine, with what a process of it holds.
type osUser struct {
	name     string
	uid, gid uint32
	groups   []uint32
}

// lookupUser returns the account name, and false when the machine has none.
func lookupUser(t *testing.T, name string) (osUser, bool) {
	t.Helper()
	u, err := user.Lookup(name)
	if err != nil {
		if _, ok := err.(user.UnknownUserError); ok {
			return osUser{}, false
		}
		t.Fatalf("look up user %s: %v", name, err)
	}
	ou := osUser{name: name, uid: mustUint32(t, u.Uid), gid: mustUint32(t, u.Gid)}
	gids, err := u.GroupIds()
	if err != nil {
		t.Fatalf("groups of %s: %v", name, err)
	}
	for _, g := range gids {
		ou.groups = append(ou.groups, mustUint32(t, g))
	}
	return ou, true
}

func mustUser(t *testing.T, name string) osUser {
	t.Helper()
	u, ok := lookupUser(t, name)
	if !ok {
		t.Fatalf("there is no user %s", name)
	}
	return u
}

func mustUint32(t *testing.T, s string) uint32 {
	t.Helper()
	n, err := strconv.ParseUint(s, 10, 32)
	if err != nil {
		t.Fatal(err)
	}
	return uint32(n)
}

// readAs reads path in a process of u, as anything running as u could.
func readAs(u osUser, path string) (string, error) {
	cmd := exec.Command("cat", path)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: u.uid, Gid: u.gid, Groups: u.groups}}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// mustServerRunAs fails unless the running server of dataDir has uid for its
// real, effective, saved and file-system uids.
func mustServerRunAs(t *testing.T, dataDir string, u osUser) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dataDir, "postmaster.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid := strings.SplitN(string(b), "\n", 2)[0]
	status, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		t.Fatal(err)
	}
	want := strconv.FormatUint(uint64(u.uid), 10)
	for line := range strings.SplitSeq(string(status), "\n") {
		if !strings.HasPrefix(line, "Uid:") {
			continue
		}
		for _, got := range strings.Fields(line)[1:] {
			if got != want {
				t.Fatalf("postmaster %s runs as %q, want uid %s (%s) throughout", pid, line, want, u.name)
			}
		}
		return
	}
	t.Fatalf("no Uid line in /proc/%s/status", pid)
}

// mustKeepOut fails unless the cluster files of dataDir (its PG_VERSION and a
// WAL segment, which holds the rows written) are readable by owner and by
// none of others.
func mustKeepOut(t *testing.T, dataDir string, owner osUser, others ...osUser) {
	t.Helper()
	segs, err := os.ReadDir(filepath.Join(dataDir, "pg_wal"))
	if err != nil {
		t.Fatal(err)
	}
	paths := []string{filepath.Join(dataDir, "PG_VERSION")}
	for _, s := range segs {
		if s.Type().IsRegular() {
			paths = append(paths, filepath.Join(dataDir, "pg_wal", s.Name()))
			break
		}
	}
	if len(paths) < 2 {
		t.Fatalf("no WAL segment in %s/pg_wal", dataDir)
	}
	for _, p := range paths {
		if out, err := readAs(owner, p); err != nil {
			t.Fatalf("%s cannot read %s (so the check proves nothing): %v: %s", owner.name, p, err, out)
		}
		for _, o := range others {
			if out, err := readAs(o, p); err == nil {
				t.Errorf("uid %d (%s) read %s", o.uid, o.name, p)
			} else if !strings.Contains(out, "Permission denied") {
				t.Errorf("uid %d (%s) reading %s: %v: %s, want Permission denied", o.uid, o.name, p, err, out)
			}
		}
	}
}

// outsiders are the users who must not read a private cluster: a tenant, and
// the machine's shared postgres user (whoever takes over the host's own
// PostgreSQL runs as it) when there is one.
func outsiders(t *testing.T) []osUser {
	t.Helper()
	us := []osUser{{name: "a tenant", uid: tenantUID, gid: tenantUID}}
	if pg, ok := lookupUser(t, "postgres"); ok {
		us = append(us, pg)
	}
	return us
}

func skipUnlessRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("only root runs PostgreSQL as another user")
	}
}

func TestRootRunsTheServerAsItsOwnAccount(t *testing.T) {
	t.Parallel()
	skipUnlessRoot(t)
	skipWithoutBinaries(t)
	c := start(t, Options{Dir: filepath.Join(baseDir(t), "data"), Settings: map[string]string{"fsync": "off"}})
	own := mustUser(t, "sless-postgres")
	mustServerRunAs(t, c.DataDir(), own)
	mustMode(t, c.DataDir(), 0o700, own.uid)
	mustKeepOut(t, c.DataDir(), own, outsiders(t)...)
}

func TestRootTakesOverAClusterOfThePostgresUser(t *testing.T) {
	t.Parallel()
	skipUnlessRoot(t)
	skipWithoutBinaries(t)
	// An earlier sless ran the cluster as the shared postgres user; a machine
	// without one stands in another account for it.
	oldName := "postgres"
	if _, ok := lookupUser(t, oldName); !ok {
		oldName = "nobody"
	}
	old := mustUser(t, oldName)
	for _, tc := range []struct {
		name string
		dir  func(t *testing.T) string
	}{
		{"in the data directory", func(t *testing.T) string { return filepath.Join(baseDir(t), "data") }},
		{"relocated", func(t *testing.T) string {
			closed := t.TempDir() // as /root: the cluster went to DefaultSharedDir
			if err := os.Chmod(closed, 0o700); err != nil {
				t.Fatal(err)
			}
			return filepath.Join(closed, "data")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			dir := tc.dir(t)
			opts := Options{Dir: dir, Settings: map[string]string{"fsync": "off"}}

			before := opts
			before.User = oldName
			c := start(t, before)
			dataDir := c.DataDir()
			if dataDir != dir {
				t.Cleanup(func() {
					_ = os.RemoveAll(dataDir)
					_ = os.Remove(dataDir + ownerSuffix)
				})
			}
			writeKept(t, c.URL("postgres"))
			if err := c.Stop(ctx); err != nil {
				t.Fatal(err)
			}
			mustMode(t, dataDir, 0o700, old.uid) // the layout of the earlier sless

			after := start(t, opts)
			if after.DataDir() != dataDir {
				t.Fatalf("DataDir() = %s, want the earlier %s", after.DataDir(), dataDir)
			}
			if got := query(t, after.URL("postgres"), "SELECT v FROM kept"); got != "yes" {
				t.Fatalf("after the hand-over kept.v = %q, want yes", got)
			}
			own := mustUser(t, "sless-postgres")
			mustServerRunAs(t, dataDir, own)
			mustMode(t, dataDir, 0o700, own.uid)
			mustKeepOut(t, dataDir, own, append(outsiders(t), old)...)
			// Nothing is left to the old owner; sless's own files stay root's.
			err := filepath.WalkDir(dataDir, func(path string, d fs.DirEntry, err error) error {
				if err != nil {
					return err
				}
				fi, err := d.Info()
				if err != nil {
					return err
				}
				want := own.uid
				if filepath.Dir(path) == dataDir && (d.Name() == passwordFile || d.Name() == logFile) {
					want = 0
				}
				if st := fi.Sys().(*syscall.Stat_t); st.Uid != want {
					t.Errorf("%s is owned by uid %d, want %d", path, st.Uid, want)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// tempUserName returns the name of a user that does not exist yet, and
// deletes the user (and its group) when the test is over.
func tempUserName(t *testing.T) string {
	t.Helper()
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	name := "sless-pgt-" + hex.EncodeToString(b)
	t.Cleanup(func() {
		if _, ok := lookupUser(t, name); !ok {
			return
		}
		if out, err := exec.Command(findTool("userdel"), name).CombinedOutput(); err != nil {
			t.Errorf("userdel %s: %v: %s", name, err, out)
		}
		if _, err := user.LookupGroup(name); err == nil {
			_ = exec.Command(findTool("groupdel"), name).Run()
		}
	})
	return name
}

// mustBeSystemAccount fails unless name is a user of its own group, without a
// home.
func mustBeSystemAccount(t *testing.T, name string) {
	t.Helper()
	u, err := user.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	g, err := user.LookupGroup(name)
	if err != nil || g.Gid != u.Gid {
		t.Errorf("group %s = %v (err %v), want the primary group (gid %s) of user %s", name, g, err, u.Gid, name)
	}
	if u.HomeDir != "/nonexistent" {
		t.Errorf("home of %s = %s, want /nonexistent", name, u.HomeDir)
	}
	if uid := mustUint32(t, u.Uid); uid == 0 || uid >= 1000 {
		t.Errorf("uid of %s = %d, want a system uid", name, uid)
	}
}

func TestRootCreatesAMissingAccount(t *testing.T) {
	t.Parallel()
	skipUnlessRoot(t)
	skipWithoutBinaries(t)
	name := tempUserName(t)
	c := start(t, Options{Dir: filepath.Join(baseDir(t), "data"), User: name, Settings: map[string]string{"fsync": "off"}})
	mustBeSystemAccount(t, name)
	own := mustUser(t, name)
	mustServerRunAs(t, c.DataDir(), own)
	mustMode(t, c.DataDir(), 0o700, own.uid)
}

func TestCreateAccountFallsBackToAdduser(t *testing.T) {
	t.Parallel()
	skipUnlessRoot(t)
	if findTool("adduser") == "" {
		t.Skip("adduser is not installed")
	}
	name := tempUserName(t)
	var ran []string
	noUseradd := func(program string) string {
		ran = append(ran, program)
		if program == "useradd" {
			return ""
		}
		return findTool(program)
	}
	if err := createAccount(context.Background(), name, noUseradd); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ran, []string{"useradd", "adduser"}) {
		t.Errorf("looked for %v, want useradd then adduser", ran)
	}
	mustBeSystemAccount(t, name)
}

func TestCreateAccountSaysWhatToRun(t *testing.T) {
	t.Parallel()
	name := "sless-pgt-missing"
	if _, ok := lookupUser(t, name); ok {
		t.Fatalf("user %s exists", name)
	}
	want := "`useradd --system --user-group --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin " + name + "`"
	for _, tc := range []struct {
		name string
		find func(string) string
		says string
	}{
		{"neither installed", func(string) string { return "" }, "neither useradd nor adduser is installed"},
		{"useradd fails", func(p string) string {
			if p == "useradd" {
				p, _ := exec.LookPath("false")
				return p
			}
			return ""
		}, "failed: exit status 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := createAccount(context.Background(), name, tc.find)
			if domain.ErrorCode(err) != domain.EUNAVAILABLE {
				t.Fatalf("got %v, want an EUNAVAILABLE error", err)
			}
			for _, s := range []string{"user " + name, tc.says, want} {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not say %q", err, s)
				}
			}
		})
	}
}
