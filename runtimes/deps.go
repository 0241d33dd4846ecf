package runtimes

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Installed dependencies are kept, when BuildOptions.DepsCache names a
// folder, under the digest of what they were installed from (the dependency
// file and every file of the zip it points to): a version with the same
// dependency files gets a copy instead of a second install, so a code-only
// change builds in the time of a copy.

// depsKey returns the digest of the dependency file name in fnDir and of the
// files and folders of fnDir that refs names, prefixed with the runtime's
// name; false when a reference leaves fnDir (nothing is reused then).
func depsKey(runtime, fnDir, name string, refs []string) (string, bool) {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00", runtime)
	paths := append([]string{name}, refs...)
	sort.Strings(paths)
	for _, ref := range paths {
		clean := filepath.Clean(ref)
		if filepath.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, "../") {
			return "", false
		}
		err := filepath.WalkDir(filepath.Join(fnDir, clean), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			if !d.Type().IsRegular() {
				return fmt.Errorf("%s is not a regular file", path)
			}
			rel, _ := filepath.Rel(fnDir, path)
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			fmt.Fprintf(h, "%s\x00%d\x00", filepath.ToSlash(rel), len(data))
			h.Write(data)
			return nil
		})
		if err != nil {
			return "", false
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:32], true
}

// reuseDeps copies the dependencies kept under key into target and says
// whether there were any.
func (o BuildOptions) reuseDeps(key, target string) (bool, error) {
	if o.DepsCache == "" || key == "" {
		return false, nil
	}
	kept := filepath.Join(o.DepsCache, key)
	if _, err := os.Stat(kept); err != nil {
		return false, nil
	}
	now := time.Now()
	_ = os.Chtimes(kept, now, now) // recently used: evicted last
	if err := copyTree(kept, target); err != nil {
		_ = os.RemoveAll(target)
		return false, fmt.Errorf("copy kept dependencies %s: %w", key, err)
	}
	return true, nil
}

// keepDeps keeps a copy of the dependencies just installed in target under
// key, for the next version with the same dependency files; it returns a
// line for the build log when that fails (the build itself stands).
func (o BuildOptions) keepDeps(key, target string) string {
	if o.DepsCache == "" || key == "" {
		return ""
	}
	if err := os.MkdirAll(o.DepsCache, 0o700); err != nil {
		return fmt.Sprintf("\n[sless: dependencies not kept for reuse: %v]\n", err)
	}
	tmp, err := os.MkdirTemp(o.DepsCache, key+".tmp-")
	if err == nil {
		if err = copyTree(target, tmp); err == nil {
			err = os.Rename(tmp, filepath.Join(o.DepsCache, key))
		}
	}
	if err != nil {
		_ = os.RemoveAll(tmp)
		if _, serr := os.Stat(filepath.Join(o.DepsCache, key)); serr == nil {
			return "" // another build kept the same ones first
		}
		return fmt.Sprintf("\n[sless: dependencies not kept for reuse: %v]\n", err)
	}
	o.evictDeps()
	return ""
}

// DefaultMaxKeptDeps is how many sets of installed dependencies a DepsCache
// keeps when BuildOptions.MaxKeptDeps leaves it out.
const DefaultMaxKeptDeps = 16

// evictDeps removes the least recently used sets of dependencies beyond
// MaxKeptDeps (the cache's folders' times say when each was kept or reused).
func (o BuildOptions) evictDeps() {
	limit := o.MaxKeptDeps
	if limit <= 0 {
		limit = DefaultMaxKeptDeps
	}
	entries, err := os.ReadDir(o.DepsCache)
	if err != nil {
		return
	}
	type kept struct {
		name string
		used time.Time
	}
	var all []kept
	for _, e := range entries {
		if info, err := e.Info(); err == nil && e.IsDir() && !strings.Contains(e.Name(), ".tmp-") {
			all = append(all, kept{e.Name(), info.ModTime()})
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].used.After(all[j].used) })
	for _, k := range all[min(limit, len(all)):] {
		_ = os.RemoveAll(filepath.Join(o.DepsCache, k.name))
	}
}

// copyTree copies the regular files, folders and symbolic links below src
// to dst (created), keeping file modes.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		to := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return os.MkdirAll(to, 0o755)
		case d.Type()&fs.ModeSymlink != 0:
			link, err := os.Readlink(path)
			if err != nil {
				return err
			}
			return os.Symlink(link, to)
		case d.Type().IsRegular():
			return copyFile(path, to, info.Mode().Perm())
		}
		return nil // sockets, devices: never part of installed dependencies
	})
}

func copyFile(src, dst string, mode fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
