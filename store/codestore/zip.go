package codestore

import (
	"archive/zip"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"sort"

	"github.com/slessio/sless/domain"
)

// Limits caps what ValidateZip accepts. Zero fields take the defaults.
type Limits struct {
	// MaxEntries caps the entries of the archive, directories included (10,000).
	MaxEntries int
	// MaxBytes caps the uncompressed bytes of all files together, counted
	// while decompressing, whatever the headers claim (256 MiB).
	MaxBytes int64
}

// DefaultLimits returns the limits of SPEC §2: 10,000 entries, 256 MiB.
func DefaultLimits() Limits { return Limits{MaxEntries: 10_000, MaxBytes: 256 << 20} }

func (l Limits) orDefaults() Limits {
	d := DefaultLimits()
	if l.MaxEntries <= 0 {
		l.MaxEntries = d.MaxEntries
	}
	if l.MaxBytes <= 0 {
		l.MaxBytes = d.MaxBytes
	}
	return l
}

// File is one regular file of a function's code.
type File struct {
	// Name is slash-separated, relative and clean ("handler.py", "lib/util.py").
	Name string
	// Mode is 0o755 when the archive marked the file executable, else 0o644.
	Mode fs.FileMode
	Data []byte
}

// centralDirSig starts every central-directory record.
var centralDirSig = []byte("PK\x01\x02")

// ValidateZip checks an uploaded zip and returns its regular files sorted by
// name; directory entries are dropped. It refuses (EINVALID, naming the entry)
// anything that is not a zip, names with "..", absolute paths, backslashes,
// drive letters or control characters, duplicate names after cleaning, a name
// that is both a file and a directory, symlinks and other non-regular entries,
// encrypted or corrupt entries, entries sharing compressed data, and a
// Dockerfile at the root (the platform writes it). More than lim.MaxEntries
// entries or lim.MaxBytes of decompressed data is ETOOLARGE.
//
// Sizes in headers are never trusted: the archive is decompressed once,
// counting and discarding bytes, and stops as soon as the total crosses
// lim.MaxBytes, so a zip bomb costs at most that much CPU and no memory.
// Only an archive that passed is decompressed again into memory (at most
// lim.MaxBytes).
func ValidateZip(data []byte, lim Limits) ([]File, error) {
	lim = lim.orDefaults()
	// archive/zip reads every central-directory record into memory before
	// its caller can count them, and ignores the record count in the end
	// record; a 32 MiB upload can hold 700,000 records (~150 MiB of heap).
	// Each record starts with the signature, so counting signatures bounds
	// them. The slack allows stored (uncompressed) zips inside the upload.
	if n := bytes.Count(data, centralDirSig); n > 4*lim.MaxEntries {
		return nil, domain.Errorf(domain.ETOOLARGE, "the zip has more than %d entries", lim.MaxEntries)
	}
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil && !errors.Is(err, zip.ErrInsecurePath) { // names are checked below, with better messages
		return nil, domain.Errorf(domain.EINVALID, "the upload is not a valid zip archive")
	}
	if len(zr.File) > lim.MaxEntries {
		return nil, domain.Errorf(domain.ETOOLARGE, "the zip has %d entries; at most %d are allowed", len(zr.File), lim.MaxEntries)
	}
	entries, err := checkEntries(zr.File)
	if err != nil {
		return nil, err
	}
	if err := checkOverlap(entries); err != nil {
		return nil, err
	}
	sizes, err := measure(entries, lim.MaxBytes)
	if err != nil {
		return nil, err
	}
	files := make([]File, len(entries))
	for i, e := range entries {
		d, err := readAll(e, sizes[i])
		if err != nil {
			return nil, err
		}
		mode := fs.FileMode(0o644)
		if e.f.Mode().Perm()&0o111 != 0 {
			mode = 0o755
		}
		files[i] = File{Name: e.name, Mode: mode, Data: d}
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Name < files[j].Name })
	return files, nil
}

type entry struct {
	f    *zip.File
	name string // cleaned
}

// checkEntries checks names and types and returns the regular files.
func checkEntries(zfiles []*zip.File) ([]entry, error) {
	var regular []entry
	files := map[string]string{} // cleaned name -> raw name
	dirs := map[string]string{}  // directories, explicit or implied by a file's path
	for _, f := range zfiles {
		name, err := cleanName(f.Name)
		if err != nil {
			return nil, err
		}
		mode := f.Mode()
		switch {
		case mode.IsDir():
			if name != "" {
				dirs[name] = f.Name
			}
			continue
		case mode&fs.ModeSymlink != 0:
			return nil, domain.Errorf(domain.EINVALID, "zip entry %q is a symbolic link; only regular files and directories are allowed", f.Name)
		case !mode.IsRegular():
			return nil, domain.Errorf(domain.EINVALID, "zip entry %q is not a regular file (mode %s); only regular files and directories are allowed", f.Name, mode.Type())
		case name == "":
			return nil, domain.Errorf(domain.EINVALID, "zip entry %q has no file name", f.Name)
		case f.Flags&0x1 != 0:
			return nil, domain.Errorf(domain.EINVALID, "zip entry %q is encrypted; upload an unencrypted zip", f.Name)
		case isDockerfile(name):
			return nil, domain.Errorf(domain.EINVALID, "the zip contains %q at its root; sless generates the Dockerfile, remove it from the zip", f.Name)
		}
		if prev, dup := files[name]; dup {
			return nil, domain.Errorf(domain.EINVALID, "zip entries %q and %q are the same file %q", prev, f.Name, name)
		}
		files[name] = f.Name
		for d := parent(name); d != ""; d = parent(d) {
			if _, ok := dirs[d]; !ok {
				dirs[d] = f.Name
			}
		}
		regular = append(regular, entry{f: f, name: name})
	}
	for name, raw := range files {
		if by, ok := dirs[name]; ok {
			return nil, domain.Errorf(domain.EINVALID, "zip entry %q is a file, but %q uses it as a directory", raw, by)
		}
	}
	return regular, nil
}

func parent(name string) string {
	for i := len(name) - 1; i >= 0; i-- {
		if name[i] == '/' {
			return name[:i]
		}
	}
	return ""
}

// checkOverlap refuses entries whose compressed data overlap: legitimate
// archives never share bytes, overlapping-entry zip bombs do (one kernel
// expanded by thousands of entries).
func checkOverlap(entries []entry) error {
	type span struct {
		start, end int64
		raw        string
	}
	spans := make([]span, 0, len(entries))
	for _, e := range entries {
		off, err := e.f.DataOffset()
		if err != nil {
			return domain.Errorf(domain.EINVALID, "zip entry %q is corrupt: its local header is unreadable", e.f.Name)
		}
		if e.f.CompressedSize64 > 0 {
			spans = append(spans, span{off, off + int64(e.f.CompressedSize64), e.f.Name})
		}
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].start < spans[j].start })
	for i := 1; i < len(spans); i++ {
		if spans[i].start < spans[i-1].end {
			return domain.Errorf(domain.EINVALID, "zip entries %q and %q share compressed data (an overlapping-entry zip bomb)", spans[i-1].raw, spans[i].raw)
		}
	}
	return nil
}

// measure decompresses every file into io.Discard and returns the real sizes,
// stopping at the first byte over maxBytes in total.
func measure(entries []entry, maxBytes int64) ([]int64, error) {
	sizes := make([]int64, len(entries))
	var total int64
	buf := make([]byte, 32<<10)
	for i, e := range entries {
		rc, err := e.f.Open()
		if err != nil {
			return nil, corrupt(e, err)
		}
		n, err := io.CopyBuffer(discard{}, io.LimitReader(rc, maxBytes-total+1), buf)
		rc.Close()
		total += n
		if total > maxBytes {
			return nil, domain.Errorf(domain.ETOOLARGE,
				"the zip expands to more than %d MiB (stopped in entry %q); the limit counts real uncompressed bytes", maxBytes>>20, e.f.Name)
		}
		if err != nil {
			return nil, corrupt(e, err)
		}
		sizes[i] = n
	}
	return sizes, nil
}

// discard is io.Discard without ReadFrom, so io.CopyBuffer uses our buffer.
type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// readAll decompresses one measured entry. It reads on to EOF so that
// archive/zip checks the CRC again.
func readAll(e entry, size int64) ([]byte, error) {
	rc, err := e.f.Open()
	if err != nil {
		return nil, corrupt(e, err)
	}
	defer rc.Close()
	data := make([]byte, size)
	if _, err := io.ReadFull(rc, data); err != nil {
		return nil, corrupt(e, err)
	}
	var one [1]byte
	for {
		n, err := rc.Read(one[:])
		if n > 0 {
			return nil, corrupt(e, errors.New("data changed between reads"))
		}
		if err == io.EOF {
			return data, nil
		}
		if err != nil {
			return nil, corrupt(e, err)
		}
	}
}

func corrupt(e entry, err error) error {
	why := "its data does not match its header (size or checksum)"
	switch {
	case errors.Is(err, zip.ErrAlgorithm):
		why = "it uses an unsupported compression method (use deflate or store)"
	case errors.Is(err, io.ErrUnexpectedEOF):
		why = "its compressed data is truncated"
	case !errors.Is(err, zip.ErrFormat) && !errors.Is(err, zip.ErrChecksum):
		why = fmt.Sprintf("its compressed data is invalid (%v)", err)
	}
	return domain.Errorf(domain.EINVALID, "zip entry %q is corrupt: %s", e.f.Name, why)
}

// Lookup returns a function that finds a file of files by its name, for
// the runtimes that look at a zip's dependency files.
func Lookup(files []File) func(name string) ([]byte, bool) {
	return func(name string) ([]byte, bool) {
		for _, f := range files {
			if f.Name == name {
				return f.Data, true
			}
		}
		return nil, false
	}
}
