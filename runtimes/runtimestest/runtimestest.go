// Package runtimestest makes Python packages for the tests of functions with
// dependencies, installable with real pip and no network: a package's source
// comes with an in-tree PEP 517 build backend that needs nothing installed
// (tiny_backend.py), and PyWheel builds its wheel with pip wheel. Only tests
// import it.
package runtimestest

import (
	_ "embed"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

//go:embed tiny_backend.py
var tinyBackend string

// PyPackage returns the files (relative path → content) of a pure-Python
// package called name whose __init__.py is module, version 1.0, for a
// folder of its own (a local path in a requirements.txt).
func PyPackage(name, module string) map[string]string {
	return map[string]string{
		"tiny_backend.py": tinyBackend,
		"pyproject.toml": "[build-system]\nrequires = []\nbuild-backend = \"tiny_backend\"\nbackend-path = [\".\"]\n\n" +
			"[project]\nname = \"" + name + "\"\nversion = \"1.0\"\n",
		name + "/__init__.py": module,
	}
}

// PyWheel builds PyPackage(name, module) with python3 -m pip wheel and
// returns the wheel's file name and content.
func PyWheel(tb testing.TB, name, module string) (file string, data []byte) {
	tb.Helper()
	src, out := tb.TempDir(), tb.TempDir()
	WriteFiles(tb, src, PyPackage(name, module))
	if b, err := exec.Command("python3", "-m", "pip", "wheel", "--no-deps", "--no-index", "--disable-pip-version-check",
		"-w", out, src).CombinedOutput(); err != nil {
		tb.Fatalf("pip wheel %s: %v\n%s", name, err, b)
	}
	file = name + "-1.0-py3-none-any.whl"
	data, err := os.ReadFile(filepath.Join(out, file))
	if err != nil {
		tb.Fatal(err)
	}
	return file, data
}

// WriteFiles writes files (relative path → content) below dir.
func WriteFiles(tb testing.TB, dir string, files map[string]string) {
	tb.Helper()
	for name, content := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
}

// Prefixed returns files with prefix/ before every path.
func Prefixed(prefix string, files map[string]string) map[string]string {
	out := make(map[string]string, len(files))
	for name, content := range files {
		out[prefix+"/"+name] = content
	}
	return out
}
