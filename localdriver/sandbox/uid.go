package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/slessio/sless/domain"
)

// uidTable gives each tenant its own host uid (as root) and keeps, per uid,
// the passwd/group files its sandboxes see and its home. The uids of a Dir
// come from its own range of UIDsPerDir uids, given by the host-wide registry
// (see uidRange), so that two platforms on one machine never share one. The
// table is the file Dir/uids.json, read and extended under an exclusive lock
// on Dir/uids.lock, so that two processes on one data dir never hand out a
// uid twice; a uid, once given, stays the tenant's.
type uidTable struct {
	dir   string
	first int // the first uid of the Dir's range
	root  bool

	mu    sync.Mutex
	uids  map[string]int
	ready map[int]bool // identity files written
}

// newUIDTable returns the table of dir; as root it first takes dir's range
// from the registry (at least base), and moves tenants that an older
// version gave uids outside it into it. Errors: EUNAVAILABLE.
func newUIDTable(dir, registry string, base int, root bool) (*uidTable, error) {
	t := &uidTable{dir: dir, root: root, uids: map[string]int{}, ready: map[int]bool{}}
	if !root {
		return t, nil
	}
	first, err := uidRange(registry, dir, base)
	if err != nil {
		return nil, domain.Errorf(domain.EUNAVAILABLE, "sandbox: the uid range of %s: %v", dir, err)
	}
	t.first = first
	if err := t.withTable(t.renumber); err != nil {
		return nil, domain.Errorf(domain.EUNAVAILABLE, "sandbox: move the tenants of %s into its uid range: %v", dir, err)
	}
	return t, nil
}

// get returns the host uid of tenant: its own when running as root (given on
// first use), the platform's otherwise.
func (t *uidTable) get(tenant string) (int, error) {
	if !t.root {
		return os.Getuid(), nil
	}
	if err := domain.ValidateNamespace(tenant); err != nil {
		return 0, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if uid, ok := t.uids[tenant]; ok {
		return uid, nil
	}
	var uid int
	err := t.withTable(func(table map[string]int) (bool, error) {
		var ok bool
		if uid, ok = table[tenant]; ok {
			return false, nil
		}
		var err error
		uid, err = t.next(table)
		table[tenant] = uid
		return true, err
	})
	if err != nil {
		return 0, domain.Errorf(domain.EUNAVAILABLE, "sandbox: give %s a uid: %v", tenant, err)
	}
	t.uids[tenant] = uid
	return uid, nil
}

// next returns the lowest uid of the range that no tenant has and the
// machine does not use.
func (t *uidTable) next(table map[string]int) (int, error) {
	used := map[int]bool{}
	for _, uid := range table {
		used[uid] = true
	}
	for uid := t.first; uid < t.first+UIDsPerDir; uid++ {
		if !used[uid] && !taken(uid) {
			return uid, nil
		}
	}
	return 0, fmt.Errorf("all %d uids of the range are given", UIDsPerDir)
}

// withTable reads the table under the file lock, lets change edit it, and
// writes it back when change says it changed it.
func (t *uidTable) withTable(change func(map[string]int) (bool, error)) error {
	unlock, err := lockFile(filepath.Join(t.dir, "uids.lock"))
	if err != nil {
		return err
	}
	defer unlock()
	path := filepath.Join(t.dir, "uids.json")
	table := map[string]int{}
	if err := readJSON(path, &table); err != nil {
		return err
	}
	changed, err := change(table)
	if err != nil || !changed {
		return err
	}
	return writeJSON(path, table)
}

// renumber gives tenants whose uid lies outside the Dir's range (an older
// version counted every Dir's from one base) a uid inside it, moving their
// homes along.
func (t *uidTable) renumber(table map[string]int) (bool, error) {
	changed := false
	for tenant, old := range table {
		if old >= t.first && old < t.first+UIDsPerDir {
			continue
		}
		uid, err := t.next(table)
		if err != nil {
			return changed, err
		}
		table[tenant] = uid
		changed = true
		oldHome := filepath.Join(t.dir, "homes", strconv.Itoa(old))
		if _, err := os.Stat(oldHome); err != nil {
			continue
		}
		home := filepath.Join(t.dir, "homes", strconv.Itoa(uid))
		if err := os.Rename(oldHome, home); err != nil {
			return changed, err
		}
		if err := chownAll(home, uid); err != nil {
			return changed, err
		}
	}
	return changed, nil
}

// chownAll gives dir and everything below it to uid (and its group).
func chownAll(dir string, uid int) error {
	return filepath.WalkDir(dir, func(path string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(path, uid, uid)
	})
}

// taken reports whether the machine knows uid as a user or gid as a group.
func taken(id int) bool {
	s := strconv.Itoa(id)
	_, errU := user.LookupId(s)
	_, errG := user.LookupGroupId(s)
	return errU == nil || errG == nil
}

// identity returns the directory holding the passwd and group files of uid,
// writing them on first use: root, nobody and "sless" as uid, so that tools
// asking who they are (npm, getpass) get an answer.
func (t *uidTable) identity(uid int) (string, error) {
	dir := filepath.Join(t.dir, "users", strconv.Itoa(uid))
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ready[uid] {
		return dir, nil
	}
	if err := writeIdentity(dir, uid); err != nil {
		return "", err
	}
	t.ready[uid] = true
	return dir, nil
}

// writeIdentity writes the passwd and group files of uid into dir: root,
// nobody and "sless" as uid; without "sless" for a uid below 0 (a sandbox
// whose tenant is not known yet).
func writeIdentity(dir string, uid int) error {
	passwd := "root:x:0:0:root:/root:/usr/sbin/nologin\n"
	group := "root:x:0:\n"
	if uid >= 0 {
		id := strconv.Itoa(uid)
		passwd += "sless:x:" + id + ":" + id + ":sless function:/tmp:/usr/sbin/nologin\n"
		group += "sless:x:" + id + ":\n"
	}
	files := map[string]string{
		"passwd": passwd + "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
		"group":  group + "nogroup:x:65534:\n",
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return domain.Errorf(domain.EUNAVAILABLE, "sandbox: %v", err)
	}
	for name, content := range files {
		if err := rewrite(filepath.Join(dir, name), content); err != nil {
			return domain.Errorf(domain.EUNAVAILABLE, "sandbox: %v", err)
		}
	}
	return nil
}

// rewrite makes the file at path hold content, in place (a sandbox that
// binds it sees the new content), and without truncating it to zero first,
// which makes ext4 write it out at once (auto_da_alloc): milliseconds.
func rewrite(path, content string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	_, err = f.WriteAt([]byte(content), 0)
	if err == nil {
		err = f.Truncate(int64(len(content)))
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// home returns the home directory of uid, created 0700 and owned by it.
func (t *uidTable) home(uid int) (string, error) {
	dir := filepath.Join(t.dir, "homes", strconv.Itoa(uid))
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return "", domain.Errorf(domain.EUNAVAILABLE, "sandbox: %v", err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", domain.Errorf(domain.EUNAVAILABLE, "sandbox: %v", err)
	}
	if t.root {
		if err := os.Chown(dir, uid, uid); err != nil {
			return "", domain.Errorf(domain.EUNAVAILABLE, "sandbox: give %s to uid %d: %v", dir, uid, err)
		}
	}
	return dir, nil
}
