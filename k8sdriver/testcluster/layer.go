package testcluster

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// layer is an image layer assembled from files of this machine: a tar in
// memory whose parent directories are added as needed. The host's top-level
// links of a merged /usr (/bin -> usr/bin, /lib -> usr/lib ...) are kept as
// links, so a program's interpreter and libraries are found where ldd saw them.
type layer struct {
	buf  bytes.Buffer
	tw   *tar.Writer
	seen map[string]bool
	err  error
}

func newLayer() *layer {
	l := &layer{seen: map[string]bool{}}
	l.tw = tar.NewWriter(&l.buf)
	for _, top := range []string{"/bin", "/sbin", "/lib", "/lib64"} {
		if target, err := os.Readlink(top); err == nil {
			l.link(top, target)
		}
	}
	return l
}

// owner is a file's user and group in the image.
type owner struct{ uid, gid int }

var rootOwner = owner{}

// dir adds a directory (and its parents).
func (l *layer) dir(p string, mode fs.FileMode, o owner) {
	p = path.Clean(p)
	if p == "/" || l.seen[p] {
		return
	}
	l.dir(path.Dir(p), 0o755, rootOwner)
	l.seen[p] = true
	m := int64(mode.Perm())
	if mode&fs.ModeSticky != 0 {
		m |= 0o1000
	}
	l.header(&tar.Header{Typeflag: tar.TypeDir, Name: strings.TrimPrefix(p, "/") + "/", Mode: m, Uid: o.uid, Gid: o.gid})
}

// file adds a regular file with the given content.
func (l *layer) file(p string, data []byte, mode fs.FileMode, o owner) {
	p = path.Clean(p)
	if l.seen[p] {
		return
	}
	l.dir(path.Dir(p), 0o755, rootOwner)
	l.seen[p] = true
	l.header(&tar.Header{Typeflag: tar.TypeReg, Name: strings.TrimPrefix(p, "/"), Mode: int64(mode.Perm()), Size: int64(len(data)), Uid: o.uid, Gid: o.gid})
	if l.err == nil {
		_, l.err = l.tw.Write(data)
	}
}

// link adds a symbolic link.
func (l *layer) link(p, target string) {
	p = path.Clean(p)
	if l.seen[p] {
		return
	}
	l.dir(path.Dir(p), 0o755, rootOwner)
	l.seen[p] = true
	l.header(&tar.Header{Typeflag: tar.TypeSymlink, Name: strings.TrimPrefix(p, "/"), Linkname: target, Mode: 0o777})
}

func (l *layer) header(h *tar.Header) {
	if l.err == nil {
		l.err = l.tw.WriteHeader(h)
	}
}

// hostFile copies a file of this machine to the same path in the image,
// following links: the file's directory is resolved, so that a path below
// /lib lands below /usr/lib as on the host.
func (l *layer) hostFile(p string) {
	dir, err := filepath.EvalSymlinks(filepath.Dir(p))
	if err != nil {
		l.fail(err)
		return
	}
	l.hostFileAt(p, filepath.Join(dir, filepath.Base(p)))
}

// hostFileAt copies a file of this machine (its target, when it is a link)
// to another path in the image.
func (l *layer) hostFileAt(src, dest string) {
	info, err := os.Stat(src)
	if err != nil {
		l.fail(err)
		return
	}
	data, err := os.ReadFile(src)
	if err != nil {
		l.fail(err)
		return
	}
	l.file(dest, data, info.Mode(), rootOwner)
}

// program copies an executable and the shared libraries ldd lists for it.
func (l *layer) program(p string) {
	l.hostFile(p)
	libs, err := sharedLibraries(p)
	if err != nil {
		l.fail(err)
		return
	}
	for _, lib := range libs {
		l.hostFile(lib)
	}
}

// tree copies a directory of this machine to dest, leaving out what skip
// says (by the path relative to src); links are kept as links, and shared
// objects get their libraries.
func (l *layer) tree(src, dest string, skip func(rel string, d fs.DirEntry) bool) {
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if rel != "." && skip != nil && skip(rel, d) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		target := path.Join(dest, filepath.ToSlash(rel))
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			l.dir(target, info.Mode(), rootOwner)
		case d.Type()&fs.ModeSymlink != 0:
			to, err := os.Readlink(p)
			if err != nil {
				return err
			}
			l.link(target, to)
		case d.Type().IsRegular():
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			l.file(target, data, info.Mode(), rootOwner)
			if strings.HasSuffix(p, ".so") || strings.Contains(p, ".so.") {
				libs, err := sharedLibraries(p)
				if err != nil {
					return err
				}
				for _, lib := range libs {
					l.hostFile(lib)
				}
			}
		}
		return nil
	})
	l.fail(err)
}

func (l *layer) fail(err error) {
	if l.err == nil && err != nil {
		l.err = err
	}
}

// image returns the layer as an image layer (gzip at its fastest level:
// it is made on every start).
func (l *layer) image() (v1.Layer, error) {
	if l.err != nil {
		return nil, l.err
	}
	if err := l.tw.Close(); err != nil {
		return nil, err
	}
	data := l.buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil },
		tarball.WithCompressionLevel(gzip.BestSpeed))
}

var lddLine = regexp.MustCompile(`(?m)(?:=>\s*)?(/\S+)\s+\(0x`)

// sharedLibraries lists the libraries (and the loader) a program or shared
// object needs, as ldd finds them; a static one needs none.
func sharedLibraries(p string) ([]string, error) {
	out, err := exec.Command("ldd", p).CombinedOutput()
	if err != nil {
		if bytes.Contains(out, []byte("not a dynamic executable")) || bytes.Contains(out, []byte("statically linked")) {
			return nil, nil
		}
		return nil, fmt.Errorf("ldd %s: %v: %s", p, err, out)
	}
	var libs []string
	for _, m := range lddLine.FindAllStringSubmatch(string(out), -1) {
		if !slices.Contains(libs, m[1]) {
			libs = append(libs, m[1])
		}
	}
	return libs, nil
}
