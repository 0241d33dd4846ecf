package localdriver

import (
	"archive/zip"
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/slessio/sless/domain"
)

// maxUnpackedBytes bounds what one zip may unpack to, as the upload check does.
const maxUnpackedBytes = 256 << 20

// unzip writes the regular files of a zip below dst. The upload was
// validated, but the build must not trust the store: a name that could
// leave dst (absolute, "..", backslash), a symlink or another special entry,
// or more than 256 MiB of data is EINVALID.
func unzip(data []byte, dst string) error {
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil && zr == nil {
		return domain.Errorf(domain.EINVALID, "the stored code is not a valid zip archive: %v", err)
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dst, err)
	}
	budget := int64(maxUnpackedBytes)
	for _, f := range zr.File {
		name, err := localName(f.Name)
		if err != nil {
			return err
		}
		mode := f.Mode()
		switch {
		case name == "":
			continue
		case mode.IsDir():
			if err := os.MkdirAll(filepath.Join(dst, name), 0o755); err != nil {
				return fmt.Errorf("unpack %q: %w", f.Name, err)
			}
			continue
		case !mode.IsRegular():
			return domain.Errorf(domain.EINVALID, "zip entry %q is not a regular file (%s)", f.Name, mode.Type())
		}
		perm := fs.FileMode(0o644)
		if mode.Perm()&0o111 != 0 {
			perm = 0o755
		}
		n, err := writeEntry(f, filepath.Join(dst, name), perm, budget)
		if err != nil {
			return err
		}
		budget -= n
	}
	return nil
}

// localName cleans a zip entry name and refuses one that is not a plain
// relative path; "" is the root.
func localName(raw string) (string, error) {
	if strings.Contains(raw, `\`) || strings.HasPrefix(raw, "/") || strings.ContainsRune(raw, 0) {
		return "", domain.Errorf(domain.EINVALID, "zip entry %q is not a relative path", raw)
	}
	for _, c := range strings.Split(raw, "/") {
		if c == ".." {
			return "", domain.Errorf(domain.EINVALID, "zip entry %q leaves the function directory", raw)
		}
	}
	name := path.Clean(raw)
	if name == "." {
		return "", nil
	}
	if !filepath.IsLocal(filepath.FromSlash(name)) {
		return "", domain.Errorf(domain.EINVALID, "zip entry %q is not a local path", raw)
	}
	return filepath.FromSlash(name), nil
}

// writeEntry writes one file, failing when it would exceed budget bytes.
func writeEntry(f *zip.File, target string, perm fs.FileMode, budget int64) (int64, error) {
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return 0, fmt.Errorf("unpack %q: %w", f.Name, err)
	}
	rc, err := f.Open()
	if err != nil {
		return 0, domain.Errorf(domain.EINVALID, "zip entry %q is unreadable: %v", f.Name, err)
	}
	defer rc.Close()
	// O_EXCL: a duplicate name in the archive must not overwrite silently.
	out, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		if os.IsExist(err) {
			return 0, domain.Errorf(domain.EINVALID, "zip entry %q appears twice", f.Name)
		}
		return 0, fmt.Errorf("unpack %q: %w", f.Name, err)
	}
	src := &readErrorer{r: io.LimitReader(rc, budget+1)}
	n, err := io.Copy(out, src)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	switch {
	case n > budget:
		return n, domain.Errorf(domain.EINVALID, "the code unpacks to more than %d MiB", maxUnpackedBytes>>20)
	case err != nil && src.err != nil: // decompression, not the disk
		return n, domain.Errorf(domain.EINVALID, "zip entry %q is corrupt: %v", f.Name, err)
	case err != nil:
		return n, fmt.Errorf("unpack %q: %w", f.Name, err)
	}
	return n, nil
}

// readErrorer remembers a read error, to tell a corrupt archive from a full disk.
type readErrorer struct {
	r   io.Reader
	err error
}

func (e *readErrorer) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil && err != io.EOF {
		e.err = err
	}
	return n, err
}
