package codestore

import (
	"archive/zip"
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// ZipEpoch is the modification time of every entry ZipDir writes, so the
// same files always make the same bytes.
var ZipEpoch = time.Date(1980, 1, 1, 0, 0, 0, 0, time.UTC)

// ZipDir zips the regular files below dir as clients upload a function's
// code, deterministically: entries sorted by slash path, ZipEpoch as every
// timestamp, mode 0644 or 0755 (any execute bit), no directory entries. skip,
// when not nil, leaves out a file or a whole directory by its slash path
// relative to dir (an ignore file's rules). Symbolic links and other special
// files are refused, as ValidateZip refuses them in an upload; so is a
// directory without files.
func ZipDir(dir string, skip func(rel string, isDir bool) bool) ([]byte, error) {
	info, err := os.Stat(dir)
	if err != nil {
		return nil, err
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("%s is not a directory", dir)
	}
	type entry struct {
		name string
		mode fs.FileMode
	}
	var entries []entry
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == dir {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if skip != nil && skip(rel, d.IsDir()) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s is not a regular file (links and devices cannot be uploaded)", p)
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		mode := fs.FileMode(0o644)
		if fi.Mode().Perm()&0o111 != 0 {
			mode = 0o755
		}
		entries = append(entries, entry{rel, mode})
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(entries) == 0 {
		return nil, fmt.Errorf("%s has no files to upload", dir)
	}
	slices.SortFunc(entries, func(a, b entry) int { return strings.Compare(a.name, b.name) })
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(e.name)))
		if err != nil {
			return nil, err
		}
		h := &zip.FileHeader{Name: e.name, Method: zip.Deflate, Modified: ZipEpoch}
		h.SetMode(e.mode)
		w, err := zw.CreateHeader(h)
		if err != nil {
			return nil, err
		}
		if _, err := w.Write(data); err != nil {
			return nil, err
		}
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
