package codestore_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/slessio/sless/store/codestore"
)

func TestZipDirIsDeterministic(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, data string, mode os.FileMode) {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), mode); err != nil {
			t.Fatal(err)
		}
	}
	write("handler.py", "def handle(e):\n    return 1\n", 0o600)
	write("bin/run", "#!/bin/sh\n", 0o700)
	write("lib/util.py", "X = 1\n", 0o644)
	write("node_modules/x/index.js", "skip me\n", 0o644)

	skip := func(rel string, isDir bool) bool { return isDir && rel == "node_modules" }
	first, err := codestore.ZipDir(dir, skip)
	if err != nil {
		t.Fatal(err)
	}
	// Times and permissions other than the execute bit do not count.
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(filepath.Join(dir, "handler.py"), later, later); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(dir, "lib/util.py"), 0o600); err != nil {
		t.Fatal(err)
	}
	second, err := codestore.ZipDir(dir, skip)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(first, second) {
		t.Fatal("the same files zipped twice give different bytes")
	}
	files, err := codestore.ValidateZip(first, codestore.DefaultLimits())
	if err != nil {
		t.Fatalf("the server refuses the zip: %v", err)
	}
	var names []string
	for _, f := range files {
		names = append(names, f.Name+" "+f.Mode.String())
	}
	if got := strings.Join(names, ", "); got != "bin/run -rwxr-xr-x, handler.py -rw-r--r--, lib/util.py -rw-r--r--" {
		t.Fatalf("files = %s", got)
	}
}

func TestZipDirRefusesWhatTheServerWould(t *testing.T) {
	t.Parallel()
	empty := t.TempDir()
	if _, err := codestore.ZipDir(empty, nil); err == nil || !strings.Contains(err.Error(), "no files") {
		t.Fatalf("empty directory: %v", err)
	}
	linked := t.TempDir()
	if err := os.Symlink("/etc/passwd", filepath.Join(linked, "passwd")); err != nil {
		t.Fatal(err)
	}
	if _, err := codestore.ZipDir(linked, nil); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("symbolic link: %v", err)
	}
	if _, err := codestore.ZipDir(filepath.Join(empty, "missing"), nil); !os.IsNotExist(err) {
		t.Fatalf("missing directory: %v", err)
	}
}
