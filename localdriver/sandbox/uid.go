package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"

	"github.com/slessio/sless/domain"
)

// uidTable gives each tenant its own host uid (as root) and keeps, per uid,
// the passwd/group files its sandboxes see and its home. The table is the
// file Dir/uids.json, read and extended under an exclusive lock on
// Dir/uids.lock, so that two processes on one data dir never hand out a uid
// twice; a uid, once given, stays the tenant's.
type uidTable struct {
	dir  string
	base int
	root bool

	mu    sync.Mutex
	uids  map[string]int
	ready map[int]bool // identity files written
}

func newUIDTable(dir string, base int, root bool) *uidTable {
	return &uidTable{dir: dir, base: base, root: root, uids: map[string]int{}, ready: map[int]bool{}}
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
	uid, err := t.allocate(tenant)
	if err != nil {
		return 0, domain.Errorf(domain.EUNAVAILABLE, "sandbox: give %s a uid: %v", tenant, err)
	}
	t.uids[tenant] = uid
	return uid, nil
}

// allocate reads the table under the file lock and returns tenant's uid,
// adding the next free one when it has none. t.mu is held.
func (t *uidTable) allocate(tenant string) (int, error) {
	lock, err := os.OpenFile(filepath.Join(t.dir, "uids.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return 0, err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return 0, fmt.Errorf("lock the uid table: %w", err)
	}
	path := filepath.Join(t.dir, "uids.json")
	table := map[string]int{}
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return 0, err
	default:
		if err := json.Unmarshal(data, &table); err != nil {
			return 0, fmt.Errorf("%s: %w", path, err)
		}
	}
	if uid, ok := table[tenant]; ok {
		return uid, nil
	}
	next := t.base
	for _, uid := range table {
		next = max(next, uid+1)
	}
	for taken(next) { // a uid the machine already uses is skipped
		next++
	}
	table[tenant] = next
	if data, err = json.MarshalIndent(table, "", "  "); err != nil {
		return 0, err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return 0, err
	}
	return next, os.Rename(tmp, path)
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
	id := strconv.Itoa(uid)
	files := map[string]string{
		"passwd": "root:x:0:0:root:/root:/usr/sbin/nologin\n" +
			"sless:x:" + id + ":" + id + ":sless function:/tmp:/usr/sbin/nologin\n" +
			"nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
		"group": "root:x:0:\nsless:x:" + id + ":\nnogroup:x:65534:\n",
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", domain.Errorf(domain.EUNAVAILABLE, "sandbox: %v", err)
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			return "", domain.Errorf(domain.EUNAVAILABLE, "sandbox: %v", err)
		}
	}
	t.ready[uid] = true
	return dir, nil
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
