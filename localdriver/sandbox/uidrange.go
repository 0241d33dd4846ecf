package sandbox

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// DefaultRegistry is the host-wide registry of uid ranges (Options.Registry).
const DefaultRegistry = "/var/lib/sless/uid-ranges.json"

// UIDsPerDir is the size of the uid range of one sandbox Dir: the most
// tenants one platform's data dir can have as root.
const UIDsPerDir = 1 << 16

// maxUID is the highest uid a range may reach ((uid_t)-1 and -2 are special).
const maxUID = 1<<32 - 3

// rangeEntry is one Dir's range in the registry. ID is also written into
// Dir/uid-range, so that a Dir that was deleted, or replaced by another at
// the same path, no longer holds its range.
type rangeEntry struct {
	Dir   string `json:"dir"`
	ID    string `json:"id"`
	First int    `json:"first"`
}

// uidRange returns the first uid of dir's range, registering one (the lowest
// free range at or above base) on first use. Entries whose Dir is gone are
// given up first. The registry is read and written under an exclusive lock
// on registry+".lock", so that platforms starting together get distinct ranges.
func uidRange(registry, dir string, base int) (int, error) {
	// 0711, as pglocal makes it: /var/lib/sless also holds the relocated
	// PostgreSQL clusters, whose user must pass through it. The registry
	// and its lock are 0600.
	if err := os.MkdirAll(filepath.Dir(registry), 0o711); err != nil {
		return 0, err
	}
	unlock, err := lockFile(registry + ".lock")
	if err != nil {
		return 0, err
	}
	defer unlock()
	var entries []rangeEntry
	if err := readJSON(registry, &entries); err != nil {
		return 0, err
	}
	idFile := filepath.Join(dir, "uid-range")
	own, _ := os.ReadFile(idFile)
	live := entries[:0]
	first := -1
	for _, e := range entries {
		id, err := os.ReadFile(filepath.Join(e.Dir, "uid-range"))
		switch {
		case err != nil && !errors.Is(err, fs.ErrNotExist):
			live = append(live, e) // unreadable now is not gone
		case err != nil, strings.TrimSpace(string(id)) != e.ID:
			// gone, or another Dir at its path: the range is free again
		default:
			live = append(live, e)
			if e.Dir == dir && e.ID == strings.TrimSpace(string(own)) {
				first = e.First
			}
		}
	}
	if first >= 0 {
		return first, writeJSON(registry, live)
	}
	if first, err = freeRange(live, base); err != nil {
		return 0, err
	}
	var raw [8]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return 0, err
	}
	id := hex.EncodeToString(raw[:])
	if err := os.WriteFile(idFile, []byte(id+"\n"), 0o600); err != nil {
		return 0, err
	}
	return first, writeJSON(registry, append(live, rangeEntry{Dir: dir, ID: id, First: first}))
}

// freeRange returns the lowest range start at or above base that no entry uses.
func freeRange(entries []rangeEntry, base int) (int, error) {
	used := map[int]bool{}
	for _, e := range entries {
		used[e.First] = true
	}
	for first := base; first+UIDsPerDir-1 <= maxUID; first += UIDsPerDir {
		if !used[first] {
			return first, nil
		}
	}
	return 0, fmt.Errorf("no free range of %d uids from %d up", UIDsPerDir, base)
}

// lockFile takes an exclusive lock on path (created 0600) and returns its release.
func lockFile(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return func() { f.Close() }, nil
}

// readJSON decodes path into v; a missing file leaves v as it is.
func readJSON(path string, v any) error {
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// writeJSON replaces path with v, atomically (0600).
func writeJSON(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
