package runtimes_test

import (
	"bytes"
	"context"
	"encoding/json"
	"go/format"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/internal/testutil"
	"github.com/slessio/sless/runtimes"
)

func mustLookup(t *testing.T, name string) runtimes.Runtime {
	t.Helper()
	rt, err := runtimes.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return rt
}

// emptyInstallDir returns a directory with an empty function/ folder.
func emptyInstallDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, runtimes.FunctionDir), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestNamesAndLookup(t *testing.T) {
	t.Parallel()
	if got, want := runtimes.Names(), []string{"go1.23", "nodejs20", "python3.11"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Names() = %v, want %v", got, want)
	}
	for _, name := range runtimes.Names() {
		if got := mustLookup(t, name).Name(); got != name {
			t.Errorf("Lookup(%q).Name() = %q", name, got)
		}
	}
	_, err := runtimes.Lookup("ruby3")
	testutil.RequireCode(t, err, domain.EINVALID)
}

func TestInstallValidatesEntrypoint(t *testing.T) {
	t.Parallel()
	cases := []struct {
		runtime, entrypoint string
		ok                  bool
	}{
		{"python3.11", "handler.handle", true},
		{"python3.11", "pkg.mod.run", true},
		{"python3.11", "handle", false},
		{"python3.11", "handler.", false},
		{"python3.11", "../x.handle", false},
		{"nodejs20", "handler.handle", true},
		{"nodejs20", "src/app.main", true},
		{"nodejs20", "handle", false},
		{"nodejs20", "../up.handle", false},
		{"go1.23", "Handle", true},
		{"go1.23", "HandleÄ", true},
		{"go1.23", "handle", false},
		{"go1.23", "Handle(); func X", false},
		{"go1.23", "main.Handle", false},
	}
	for _, c := range cases {
		err := mustLookup(t, c.runtime).Install(emptyInstallDir(t), c.entrypoint)
		if c.ok && err != nil {
			t.Errorf("%s Install(%q): %v", c.runtime, c.entrypoint, err)
		}
		if !c.ok {
			testutil.RequireCode(t, err, domain.EINVALID)
		}
	}
}

func TestInstallNeedsFunctionDir(t *testing.T) {
	t.Parallel()
	for _, name := range runtimes.Names() {
		err := mustLookup(t, name).Install(t.TempDir(), "Handle")
		testutil.RequireCode(t, err, domain.EUNPROCESSABLE)
	}
}

func TestInstallGo(t *testing.T) {
	t.Parallel()
	rt := mustLookup(t, "go1.23")

	t.Run("writes_formatted_wrapper_and_go_mod", func(t *testing.T) {
		t.Parallel()
		dir := emptyInstallDir(t)
		if err := rt.Install(dir, "Serve"); err != nil {
			t.Fatal(err)
		}
		fnDir := filepath.Join(dir, runtimes.FunctionDir)
		names := []string{"sless_main.go", "sless_fd_linux.go", "sless_fd_other.go", "sless_entrypoint.go"}
		for _, name := range names {
			src, err := os.ReadFile(filepath.Join(fnDir, name))
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Contains(src, []byte("ignore")) {
				t.Errorf("%s still carries the ignore build constraint", name)
			}
			if formatted, err := format.Source(src); err != nil || !bytes.Equal(formatted, src) {
				t.Errorf("%s is not gofmt-formatted Go (%v)", name, err)
			}
		}
		binding, _ := os.ReadFile(filepath.Join(fnDir, "sless_entrypoint.go"))
		if !bytes.Contains(binding, []byte("var slessEntrypoint slessFunc = Serve\n")) {
			t.Errorf("entrypoint binding:\n%s", binding)
		}
		other, _ := os.ReadFile(filepath.Join(fnDir, "sless_fd_other.go"))
		if !bytes.HasPrefix(other, []byte("//go:build !linux\n")) {
			t.Errorf("sless_fd_other.go lost its platform constraint:\n%s", other)
		}
		gomod, _ := os.ReadFile(filepath.Join(fnDir, "go.mod"))
		if !bytes.HasPrefix(gomod, []byte("module function\n")) {
			t.Errorf("created go.mod:\n%s", gomod)
		}
	})

	t.Run("keeps_users_go_mod", func(t *testing.T) {
		t.Parallel()
		dir := emptyInstallDir(t)
		own := []byte("module example.com/mine\n\ngo 1.22\n")
		path := filepath.Join(dir, runtimes.FunctionDir, "go.mod")
		if err := os.WriteFile(path, own, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := rt.Install(dir, "Handle"); err != nil {
			t.Fatal(err)
		}
		if got, _ := os.ReadFile(path); !bytes.Equal(got, own) {
			t.Errorf("go.mod changed to:\n%s", got)
		}
	})
}

func TestCommand(t *testing.T) {
	t.Parallel()
	for _, name := range runtimes.Names() {
		rt := mustLookup(t, name)
		_, err := rt.Command(emptyInstallDir(t), runtimes.ModeServer)
		testutil.RequireCode(t, err, domain.EUNPROCESSABLE) // not installed (Go: not built)
	}

	dir := mustPrepare(t, "python3.11", "handler", "handler.handle")
	rt := mustLookup(t, "python3.11")
	_, err := rt.Command(dir, "daemon")
	testutil.RequireCode(t, err, domain.EINVALID)

	spec, err := rt.Command(dir, runtimes.ModeJob)
	if err != nil {
		t.Fatal(err)
	}
	if spec.Dir != filepath.Join(dir, runtimes.FunctionDir) {
		t.Errorf("Dir = %q", spec.Dir)
	}
	env := strings.Join(spec.Env, "\n")
	if !strings.Contains(env, "SLESS_MODE=job") || strings.Contains(env, "SLESS_HOST") {
		t.Errorf("job environment:\n%s", env)
	}
	// The interpreter is the real binary, never a shim script.
	head := make([]byte, 2)
	f, err := os.Open(spec.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Read(head); err != nil || string(head) == "#!" || !filepath.IsAbs(spec.Path) {
		t.Errorf("interpreter %s is a script or relative (%v)", spec.Path, err)
	}
}

// TestBuildNodeDependencies runs a real npm install of a local (file:) dependency,
// then the function that requires it.
func TestBuildNodeDependencies(t *testing.T) {
	t.Parallel()
	dir := mustPrepare(t, "nodejs20", "deps", "handler.handle")
	if _, err := os.Stat(filepath.Join(dir, runtimes.FunctionDir, "node_modules", "greet")); err != nil {
		t.Fatalf("npm install did not install the dependency: %v", err)
	}
	got := runJob(t, mustCommand(t, "nodejs20", dir, runtimes.ModeJob), entry("handler.handle"), `SLESS_EVENT={"name": "sless"}`)
	if got.code != 0 {
		t.Fatalf("exit %d: %s", got.code, got.stderr)
	}
	var result map[string]any
	if err := json.Unmarshal([]byte(lastLine(t, got.stdout)), &result); err != nil || result["greeting"] != "hello sless" {
		t.Errorf("result %q (%v)", got.stdout, err)
	}

	// Without dependencies, Build touches nothing.
	plain := mustPrepare(t, "nodejs20", "handler", "handler.handle")
	if _, err := os.Stat(filepath.Join(plain, runtimes.FunctionDir, "node_modules")); err == nil {
		t.Error("Build ran npm install for a function without dependencies")
	}
}

func TestBuildFailsReadably(t *testing.T) {
	t.Parallel()
	rt := mustLookup(t, "nodejs20")
	dir := emptyInstallDir(t)
	if err := os.WriteFile(filepath.Join(dir, runtimes.FunctionDir, "package.json"), []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := rt.Build(context.Background(), dir, runtimes.BuildOptions{})
	testutil.RequireCode(t, err, domain.EUNPROCESSABLE)

	_, err = mustLookup(t, "go1.23").Build(context.Background(), emptyInstallDir(t), runtimes.BuildOptions{})
	testutil.RequireCode(t, err, domain.EUNPROCESSABLE) // not installed
}

func TestImageContext(t *testing.T) {
	t.Parallel()
	for _, name := range runtimes.Names() {
		fsys := mustLookup(t, name).ImageContext()
		dockerfile, err := fs.ReadFile(fsys, "Dockerfile")
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, want := range []string{"USER 10001", "/app/function", "CMD ", "SLESS_MODE=job"} {
			if !bytes.Contains(dockerfile, []byte(want)) {
				t.Errorf("%s Dockerfile lacks %q", name, want)
			}
		}
		// Every file the Dockerfile copies is in the context.
		for _, line := range strings.Split(string(dockerfile), "\n") {
			fields := strings.Fields(line)
			if len(fields) < 3 || fields[0] != "COPY" || strings.HasPrefix(fields[1], "--") {
				continue
			}
			for _, src := range fields[1 : len(fields)-1] {
				if _, err := fs.Stat(fsys, src); err != nil {
					t.Errorf("%s Dockerfile copies %s: %v", name, src, err)
				}
			}
		}
	}
	// The Go image copies every wrapper file Install copies.
	dockerfile, _ := fs.ReadFile(mustLookup(t, "go1.23").ImageContext(), "Dockerfile")
	wrappers, _ := fs.Glob(mustLookup(t, "go1.23").ImageContext(), "*.go")
	for _, name := range wrappers {
		if !bytes.Contains(dockerfile, []byte(" "+name)) {
			t.Errorf("go1.23 Dockerfile does not copy %s", name)
		}
	}
}

// TestNodeESModule: an entrypoint in a .mjs file is imported rather than required.
func TestNodeESModule(t *testing.T) {
	t.Parallel()
	dir := mustPrepare(t, "nodejs20", "esm", "handler.handle")
	got := runJob(t, mustCommand(t, "nodejs20", dir, runtimes.ModeJob), entry("handler.handle"), `SLESS_EVENT={"n": 3}`)
	if got.code != 0 {
		t.Fatalf("exit %d: %s", got.code, got.stderr)
	}
	if line := lastLine(t, got.stdout); line != `{"module":"esm","n":3}` {
		t.Errorf("result %q", line)
	}
}
