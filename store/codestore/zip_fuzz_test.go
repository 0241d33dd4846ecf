package codestore_test

import (
	"errors"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/store/codestore"
)

// FuzzValidateZip: ValidateZip never panics, refuses with EINVALID or
// ETOOLARGE only, and what it accepts stays inside the archive and its
// limits: clean, relative, unique names without "..", backslashes or
// control characters, sorted; no Dockerfile; within the entry and byte
// caps. The seeds in testdata/fuzz/FuzzValidateZip (zip slips, symlinks,
// duplicates, a bomb, truncations) run with go test.
func FuzzValidateZip(f *testing.F) {
	lim := codestore.Limits{MaxEntries: 64, MaxBytes: 1 << 20}
	f.Fuzz(func(t *testing.T, data []byte) {
		files, err := codestore.ValidateZip(data, lim)
		if err != nil {
			var e *domain.Error
			if !errors.As(err, &e) || (e.Code != domain.EINVALID && e.Code != domain.ETOOLARGE) || e.Message == "" {
				t.Fatalf("refused with %v: not a client's error", err)
			}
			return
		}
		if len(files) > lim.MaxEntries {
			t.Fatalf("%d files accepted, the limit is %d", len(files), lim.MaxEntries)
		}
		var total int64
		for i, file := range files {
			name := file.Name
			total += int64(len(file.Data))
			switch {
			case name == "" || !utf8.ValidString(name) || path.Clean(name) != name || !filepath.IsLocal(name):
				t.Fatalf("file %q is not a clean path inside the archive", name)
			case strings.HasPrefix(name, "/") || strings.Contains(name, `\`) || strings.Contains(name, ":") && len(name) > 1 && name[1] == ':':
				t.Fatalf("file %q could mean a path outside the archive", name)
			case strings.IndexFunc(name, unicode.IsControl) >= 0:
				t.Fatalf("file %q has a control character", name)
			case strings.EqualFold(name, "Dockerfile"):
				t.Fatalf("a Dockerfile was accepted")
			case file.Mode != 0o644 && file.Mode != 0o755:
				t.Fatalf("file %q has mode %v", name, file.Mode)
			case i > 0 && files[i-1].Name >= name:
				t.Fatalf("files %q and %q: not sorted, or the same", files[i-1].Name, name)
			}
			for _, c := range strings.Split(name, "/") {
				if c == ".." || c == "." || c == "" {
					t.Fatalf("file %q has the component %q", name, c)
				}
			}
		}
		if total > lim.MaxBytes {
			t.Fatalf("%d bytes accepted, the limit is %d", total, lim.MaxBytes)
		}
	})
}
