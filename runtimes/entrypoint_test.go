package runtimes_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/internal/testutil"
	"github.com/slessio/sless/runtimes"
	"github.com/slessio/sless/runtimes/runtimestest"
)

// buildAndCheck installs files as a function with entrypoint, builds and
// checks it as a driver does, and returns the error of the step that failed.
func buildAndCheck(t *testing.T, runtime, entrypoint string, files map[string]string) (dir string, err error) {
	t.Helper()
	rt := mustLookup(t, runtime)
	dir = emptyInstallDir(t)
	runtimestest.WriteFiles(t, filepath.Join(dir, runtimes.FunctionDir), files)
	if err := rt.Install(dir, entrypoint); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.Build(context.Background(), dir, runtimes.BuildOptions{}); err != nil {
		return dir, err
	}
	_, err = rt.Check(context.Background(), dir, runtimes.BuildOptions{Env: []string{entry(entrypoint)}})
	return dir, err
}

// requireTenantMessage fails unless err is EUNPROCESSABLE with exactly want,
// which names neither this machine's paths nor the runtime's own files.
func requireTenantMessage(t *testing.T, dir string, err error, want string) {
	t.Helper()
	testutil.RequireCode(t, err, domain.EUNPROCESSABLE)
	msg := domain.ErrorMessage(err)
	if msg != want {
		t.Errorf("message\n%s\nwant\n%s", msg, want)
	}
	for _, leak := range []string{dir, "sless_", "slessFunc", "list its package"} {
		if strings.Contains(msg, leak) {
			t.Errorf("the message names %q: %s", leak, msg)
		}
	}
}

// TestMissingEntrypointFileSaysWhatIsThere: an upload without the file the
// entrypoint names (handler.py for handler.handle, handler.js, a func
// Handle) fails its build saying so and listing the upload's top-level
// files, not with a hint to list a package in requirements.txt.
func TestMissingEntrypointFileSaysWhatIsThere(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, runtime, entrypoint string
		files                     map[string]string
		want                      string
	}{
		{"python", "python3.11", "handler.handle",
			map[string]string{"main.py": "def handle(event):\n    return 1\n", "requirements.txt": "# nothing yet\n"},
			"the entrypoint handler.handle names handler.py (or a handler/ package), which is not in the upload; its top-level files are: main.py, requirements.txt"},
		{"python_zipped_folder", "python3.11", "handler.handle",
			map[string]string{"myfn/handler.py": "def handle(event):\n    return 1\n"},
			"the entrypoint handler.handle names handler.py (or a handler/ package), which is not in the upload; its top-level files are: myfn/"},
		{"python_package", "python3.11", "app.api.handle",
			map[string]string{"app/__init__.py": "", "app/main.py": "def handle(event):\n    return 1\n"},
			"the entrypoint app.api.handle names app/api.py (or a app/api/ package), which is not in the upload; its top-level files are: app/"},
		{"python_empty", "python3.11", "handler.handle", nil,
			"the entrypoint handler.handle names handler.py (or a handler/ package), which is not in the upload; the upload has no files"},
		{"nodejs", "nodejs20", "handler.handle",
			map[string]string{"index.js": "exports.handle = () => 1\n", "package.json": `{"name": "fn"}`},
			"the entrypoint handler.handle names handler.js (or handler.mjs), which is not in the upload; its top-level files are: index.js, package.json"},
		{"nodejs_path", "nodejs20", "src/handler.handle",
			map[string]string{"handler.js": "exports.handle = () => 1\n"},
			"the entrypoint src/handler.handle names src/handler.js (or src/handler.mjs), which is not in the upload; its top-level files are: handler.js"},
		{"go", "go1.23", "Handle",
			map[string]string{"main.go": "package main\n\nfunc Other() {}\n"},
			"the entrypoint Handle names a func Handle of package main at the top of the upload, which is not there; its top-level files are: main.go"},
		{"go_zipped_folder", "go1.23", "Handle",
			map[string]string{"fn/go.mod": "module fn\n\ngo 1.23\n", "fn/handler.go": "package main\n\nfunc Handle() {}\n"},
			"the entrypoint Handle names a func Handle of package main at the top of the upload, which is not there; its top-level files are: fn/"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir, err := buildAndCheck(t, tc.runtime, tc.entrypoint, tc.files)
			requireTenantMessage(t, dir, err, tc.want)
		})
	}
}

// TestGoEntrypointProblemsInTheTenantsWords: a Go entrypoint of the wrong
// kind, code that is not package main, or a func main of the user's own fail
// the build saying so, not with the compiler's words about the runtime's
// generated files.
func TestGoEntrypointProblemsInTheTenantsWords(t *testing.T) {
	t.Parallel()
	const signature = "func(ctx context.Context, event map[string]any) (any, error)"
	for _, tc := range []struct {
		name, code, want string
	}{
		{"signature", "package main\n\nfunc Handle() {}\n",
			"the entrypoint Handle must be a " + signature + "; the upload's Handle is a value of type func()"},
		{"constant", "package main\n\nconst Handle = 1\n",
			"the entrypoint Handle must be a " + signature + "; the upload's Handle is an untyped int constant 1"},
		{"type", "package main\n\ntype Handle int\n",
			"the entrypoint Handle must be a " + signature + "; the upload's Handle is a type"},
		{"package", "package handler\n\nfunc Handle() {}\n",
			"the upload's top-level .go files must be package main, not package handler (handler.go)"},
		{"own_main", "package main\n\nimport \"context\"\n\nfunc main() {}\n\nfunc Handle(ctx context.Context, event map[string]any) (any, error) { return nil, nil }\n",
			"the upload declares main (handler.go:5:6), a name the runtime's part of package main uses: " +
				"remove or rename it (the runtime provides func main, which calls the entrypoint)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir, err := buildAndCheck(t, "go1.23", "Handle", map[string]string{"handler.go": tc.code})
			requireTenantMessage(t, dir, err, tc.want)
		})
	}
}
