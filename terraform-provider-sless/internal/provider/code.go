package provider

import (
	"archive/zip"
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/slessio/sless/store/codestore"
)

// zipEpoch is the modification time of every entry of a zipped source_dir,
// so the same files always make the same bytes.
var zipEpoch = time.Date(1980, 1, 1, 0, 0, 0, 0, time.UTC)

// code is a function's code as the provider uploads it: the zip and the
// digest the server computes of it (codestore.Digest over names, modes and
// contents), which is what code_hash holds.
type code struct {
	zip    []byte
	digest string
}

// zipDir zips the regular files below dir deterministically: entries sorted
// by slash path, fixed timestamps, mode 0644 or 0755 (executable), no
// directory entries. Symbolic links and other special files are refused,
// as the server refuses them in a zip.
func zipDir(dir string) (code, error) {
	info, err := os.Stat(dir)
	if err != nil {
		return code{}, fmt.Errorf("source_dir: %w", err)
	}
	if !info.IsDir() {
		return code{}, fmt.Errorf("source_dir: %s is not a directory", dir)
	}
	var names []string
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("source_dir: %s is not a regular file (links and devices cannot be zipped)", p)
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		names = append(names, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		return code{}, err
	}
	if len(names) == 0 {
		return code{}, fmt.Errorf("source_dir: %s has no files", dir)
	}
	slices.Sort(names)
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, name := range names {
		p := filepath.Join(dir, filepath.FromSlash(name))
		data, err := os.ReadFile(p)
		if err != nil {
			return code{}, fmt.Errorf("source_dir: %w", err)
		}
		st, err := os.Stat(p)
		if err != nil {
			return code{}, fmt.Errorf("source_dir: %w", err)
		}
		mode := fs.FileMode(0o644)
		if st.Mode().Perm()&0o111 != 0 {
			mode = 0o755
		}
		h := &zip.FileHeader{Name: name, Method: zip.Deflate, Modified: zipEpoch}
		h.SetMode(mode)
		w, err := zw.CreateHeader(h)
		if err != nil {
			return code{}, err
		}
		if _, err := w.Write(data); err != nil {
			return code{}, err
		}
	}
	if err := zw.Close(); err != nil {
		return code{}, err
	}
	return codeOf(buf.Bytes(), "source_dir "+dir)
}

// readZip reads the zip at code_path.
func readZip(p string) (code, error) {
	data, err := os.ReadFile(p)
	if err != nil {
		return code{}, fmt.Errorf("code_path: %w", err)
	}
	return codeOf(data, "code_path "+p)
}

// codeOf checks a zip as the server will and computes its digest.
func codeOf(data []byte, what string) (code, error) {
	files, err := codestore.ValidateZip(data, codestore.DefaultLimits())
	if err != nil {
		return code{}, fmt.Errorf("%s: %s", what, messageOf(err))
	}
	return code{zip: data, digest: codestore.Digest(files)}, nil
}
