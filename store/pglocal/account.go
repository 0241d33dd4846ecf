package pglocal

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/slessio/sless/domain"
)

// DefaultUser is the account that runs initdb and postgres when the process is
// root (see Options.User). It is sless's own, shared with no other service, so
// that whoever takes over another account (such as the postgres user of the
// machine's own PostgreSQL) cannot read the private cluster; it is created
// when missing.
const DefaultUser = "sless-postgres"

// account is the operating-system user that runs initdb and postgres. The zero
// value means "the current process's user".
type account struct {
	name     string
	uid, gid uint32
	other    bool // a different user than the current process (we are root)
}

// chooseAccount returns the current user, or, when the process is root (which
// initdb and postgres refuse), the named unprivileged user (DefaultUser if
// empty), created when it does not exist. It fails with EUNAVAILABLE when the
// user cannot be created.
func chooseAccount(ctx context.Context, name string) (account, error) {
	if os.Geteuid() != 0 {
		return account{}, nil
	}
	if name == "" {
		name = DefaultUser
	}
	u, err := user.Lookup(name)
	if errors.As(err, new(user.UnknownUserError)) {
		if err := createAccount(ctx, name, findTool); err != nil {
			return account{}, err
		}
		u, err = user.Lookup(name)
	}
	if err != nil {
		return account{}, fmt.Errorf("look up user %s, who runs PostgreSQL because we are root: %w", name, err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 != nil || err2 != nil {
		return account{}, fmt.Errorf("user %q has a non-numeric uid/gid (%s/%s)", name, u.Uid, u.Gid)
	}
	if uid == 0 {
		return account{}, fmt.Errorf("user %q is root; PostgreSQL needs an unprivileged user", name)
	}
	return account{name: name, uid: uint32(uid), gid: uint32(gid), other: true}, nil
}

// accountMu keeps this process's clusters from creating the same user at once
// (another process doing it too is handled by looking again).
var accountMu sync.Mutex

// createAccount adds the system user name, with a group of its own, no home
// and no login, with useradd or else adduser (find returns a program's path,
// "" when it is not installed). It fails with EUNAVAILABLE, saying what to run,
// when neither is installed or the one found fails.
func createAccount(ctx context.Context, name string, find func(program string) string) error {
	accountMu.Lock()
	defer accountMu.Unlock()
	if _, err := user.Lookup(name); err == nil {
		return nil // created meanwhile
	}
	useradd := []string{"useradd", "--system", "--user-group", "--no-create-home", "--home-dir", "/nonexistent", "--shell", "/usr/sbin/nologin", name}
	adduser := []string{"adduser", "--system", "--group", "--no-create-home", "--home", "/nonexistent", "--shell", "/usr/sbin/nologin", name}
	howTo := fmt.Sprintf("create it (`%s`) or run sless as an unprivileged user", strings.Join(useradd, " "))
	for _, args := range [][]string{useradd, adduser} {
		path := find(args[0])
		if path == "" {
			continue
		}
		out, err := exec.CommandContext(ctx, path, args[1:]...).CombinedOutput()
		if _, lerr := user.Lookup(name); lerr == nil {
			return nil // made by us, or by another process while we tried
		}
		if err == nil {
			err = errors.New("exited 0 but the user does not exist")
		}
		return domain.Errorf(domain.EUNAVAILABLE, "running as root: PostgreSQL runs as user %s, who does not exist, and `%s` failed: %v: %s; %s",
			name, strings.Join(args, " "), err, strings.TrimSpace(tail(string(out), 5)), howTo)
	}
	return domain.Errorf(domain.EUNAVAILABLE, "running as root: PostgreSQL runs as user %s, who does not exist, and neither useradd nor adduser is installed to create it; %s",
		name, howTo)
}

// findTool returns the path of the program name, from PATH or else the sbin
// directories (not on every root's PATH), or "" when there is none.
func findTool(name string) string {
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	for _, dir := range []string{"/usr/sbin", "/sbin"} {
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
			return p
		}
	}
	return ""
}

// command prepares a PostgreSQL program to run as the account, in its own process
// group so a terminal's Ctrl-C reaches sless first and sless decides when the
// server stops.
func (a account) command(ctx context.Context, path string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if a.other {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: a.uid, Gid: a.gid}
		// postgres stats its working directory; root's may be closed to it.
		cmd.Dir = "/"
		cmd.Env = append(os.Environ(), "HOME=/", "USER="+a.name, "LOGNAME="+a.name)
	}
	return cmd
}

// prepareDir creates the data directory (mode 0700, as initdb wants it), hands it
// to the account and checks that the account can reach it through every parent.
func (a account) prepareDir(dir string) error {
	if err := mkdirParents(dir); err != nil {
		return err
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("create data directory: %w", err)
	}
	if !a.other {
		return nil
	}
	if err := a.checkTraversable(filepath.Dir(dir)); err != nil {
		return err
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Uid == a.uid {
		return nil // already theirs (a reused data directory)
	}
	// Only an empty (new) directory is handed over: a populated directory owned
	// by someone else is not ours to take.
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	if len(entries) > 0 {
		return fmt.Errorf("data directory %s is not empty and not owned by user %s", dir, a.name)
	}
	if err := os.Chown(dir, int(a.uid), int(a.gid)); err != nil {
		return fmt.Errorf("give data directory to user %s: %w", a.name, err)
	}
	return os.Chmod(dir, 0o700)
}

// checkTraversable walks from dir up to / and fails on the first directory the
// account cannot enter (t.TempDir() and /root are 0700 root, for instance).
func (a account) checkTraversable(dir string) error {
	for d := dir; ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			return err
		}
		if !a.canEnter(fi) {
			return fmt.Errorf("directory %s (mode %v) cannot be entered by user %s, who runs PostgreSQL because we are root; "+
				"choose a data directory below world-traversable directories, or `chmod o+x %s`", d, fi.Mode().Perm(), a.name, d)
		}
		if d == filepath.Dir(d) {
			return nil
		}
	}
}

func (a account) canEnter(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return true // cannot tell; let PostgreSQL report it
	}
	perm := fi.Mode().Perm()
	switch {
	case st.Uid == a.uid:
		return perm&0o100 != 0
	case st.Gid == a.gid:
		return perm&0o010 != 0
	default:
		return perm&0o001 != 0
	}
}
