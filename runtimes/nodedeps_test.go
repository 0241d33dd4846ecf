package runtimes_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/internal/testutil"
	"github.com/slessio/sless/runtimes"
	"github.com/slessio/sless/runtimes/runtimestest"
)

// TestBuildNodeLockfile: with a package-lock.json the build runs npm ci,
// which installs exactly the locked version of a real package from the npm
// registry, and the function uses it.
func TestBuildNodeLockfile(t *testing.T) {
	t.Parallel()
	rt := mustLookup(t, "nodejs20")
	dir := emptyInstallDir(t)
	fn := filepath.Join(dir, runtimes.FunctionDir)
	runtimestest.WriteFiles(t, fn, map[string]string{
		"package.json": `{"name": "uses-ms", "version": "1.0.0", "private": true, "dependencies": {"ms": "^2.1.0"}}`,
		"handler.js":   "const ms = require('ms');\nexports.handle = () => ({ms: ms('2 days')});\n",
	})
	lock := exec.Command("npm", "install", "--package-lock-only", "--ignore-scripts", "--no-audit", "--no-fund", "ms@2.1.2")
	lock.Dir = fn
	if out, err := lock.CombinedOutput(); err != nil {
		t.Fatalf("write the lockfile (needs the npm registry): %v\n%s", err, out)
	}
	if err := rt.Install(dir, "handler.handle"); err != nil {
		t.Fatal(err)
	}
	log, err := rt.Build(context.Background(), dir, runtimes.BuildOptions{})
	if err != nil {
		t.Fatalf("build: %v\n%s", err, log)
	}
	data, err := os.ReadFile(filepath.Join(fn, "node_modules", "ms", "package.json"))
	if err != nil || !strings.Contains(string(data), `"version": "2.1.2"`) {
		t.Fatalf("npm ci did not install the locked ms 2.1.2: %v %s", err, data)
	}
	got := runJob(t, mustCommand(t, "nodejs20", dir, runtimes.ModeJob), entry("handler.handle"), `SLESS_EVENT={}`)
	var result map[string]any
	if err := json.Unmarshal([]byte(lastLine(t, got.stdout)), &result); err != nil || result["ms"] != 172800000.0 {
		t.Fatalf("result %q %q (%v)", got.stdout, got.stderr, err)
	}
}

// TestBuildNodeInstallScripts: a dependency's postinstall script does not run
// unless the operator allows install scripts (SLESS_NPM_ALLOW_SCRIPTS=true).
func TestBuildNodeInstallScripts(t *testing.T) {
	for _, allow := range []bool{false, true} {
		if allow {
			t.Setenv(runtimes.EnvNpmAllowScripts, "true")
		}
		rt := mustLookup(t, "nodejs20")
		dir := emptyInstallDir(t)
		fn := filepath.Join(dir, runtimes.FunctionDir)
		runtimestest.WriteFiles(t, fn, map[string]string{
			"package.json": `{"name": "scripts", "version": "1.0.0", "private": true, "dependencies": {"scripty": "file:./scripty"}}`,
			"handler.js":   "exports.handle = () => require('scripty');\n",
			"scripty/package.json": `{"name": "scripty", "version": "1.0.0", "main": "index.js",
				"scripts": {"postinstall": "node -e \"require('fs').writeFileSync('ran', 'yes')\""}}`,
			"scripty/index.js": "module.exports = 'scripty';\n",
		})
		if err := rt.Install(dir, "handler.handle"); err != nil {
			t.Fatal(err)
		}
		if log, err := rt.Build(context.Background(), dir, runtimes.BuildOptions{}); err != nil {
			t.Fatalf("build: %v\n%s", err, log)
		}
		// A file: dependency is linked: the script would run in its own folder.
		_, err := os.Stat(filepath.Join(fn, "scripty", "ran"))
		if ran := err == nil; ran != allow {
			t.Errorf("allowed=%v: the postinstall script ran=%v", allow, ran)
		}
	}
}

// buildGreeter builds a Node.js version whose file: dependency answers
// greeting, with opts (a DepsCache), and returns its folder and whether npm ran.
func buildGreeter(t *testing.T, greeting string, opts runtimes.BuildOptions) (dir string, ranNpm bool) {
	t.Helper()
	rt := mustLookup(t, "nodejs20")
	dir = emptyInstallDir(t)
	runtimestest.WriteFiles(t, filepath.Join(dir, runtimes.FunctionDir), map[string]string{
		"package.json":       `{"name": "greeter", "version": "1.0.0", "private": true, "dependencies": {"greet": "file:./greet"}}`,
		"handler.js":         "exports.handle = () => require('greet')();\n",
		"greet/package.json": `{"name": "greet", "version": "1.0.0", "main": "index.js"}`,
		"greet/index.js":     "module.exports = () => '" + greeting + "';\n",
	})
	if err := rt.Install(dir, "handler.handle"); err != nil {
		t.Fatal(err)
	}
	opts.Runner = func(ctx context.Context, tool runtimes.Tool) ([]byte, error) {
		ranNpm = ranNpm || tool.Name == "npm install"
		return runtimes.LocalRunner(ctx, tool)
	}
	if log, err := rt.Build(context.Background(), dir, opts); err != nil {
		t.Fatalf("build: %v\n%s", err, log)
	}
	return dir, ranNpm
}

// TestNodeDependenciesAreReused: a second version with the same package.json
// and file: dependency gets a copy of node_modules and runs no npm; a changed
// dependency installs again.
func TestNodeDependenciesAreReused(t *testing.T) {
	t.Parallel()
	opts := runtimes.BuildOptions{DepsCache: t.TempDir()}
	if _, ran := buildGreeter(t, "hi", opts); !ran {
		t.Fatal("the first version ran no npm install")
	}
	dir, ran := buildGreeter(t, "hi", opts)
	if ran {
		t.Fatal("the same dependencies ran npm again")
	}
	got := runJob(t, mustCommand(t, "nodejs20", dir, runtimes.ModeJob), entry("handler.handle"), `SLESS_EVENT={}`)
	if got.code != 0 || lastLine(t, got.stdout) != `"hi"` {
		t.Fatalf("with reused node_modules: exit %d, %q %q", got.code, got.stdout, got.stderr)
	}
	if _, ran := buildGreeter(t, "hello", opts); !ran {
		t.Fatal("a changed file: dependency did not install again")
	}
}

// TestNodeInstallFailureSaysNpmsError: a dependency the npm registry does not have fails
// the build with npm's own error line first.
func TestNodeInstallFailureSaysNpmsError(t *testing.T) {
	t.Parallel()
	rt := mustLookup(t, "nodejs20")
	dir := emptyInstallDir(t)
	runtimestest.WriteFiles(t, filepath.Join(dir, runtimes.FunctionDir), map[string]string{
		"package.json": `{"name": "broken", "version": "1.0.0", "private": true, "dependencies": {"sless-test-no-such-package-4f1c": "1.0.0"}}`,
		"handler.js":   "exports.handle = () => 1;\n",
	})
	if err := rt.Install(dir, "handler.handle"); err != nil {
		t.Fatal(err)
	}
	_, err := rt.Build(context.Background(), dir, runtimes.BuildOptions{})
	testutil.RequireCode(t, err, domain.EUNPROCESSABLE)
	msg := domain.ErrorMessage(err)
	if first, _, _ := strings.Cut(msg, "\n"); !strings.HasPrefix(first, "npm install: ") || strings.Contains(first, "failed:") {
		t.Fatalf("the first line is not npm's error: %q", msg)
	}
	if _, err := os.Stat(filepath.Join(dir, runtimes.FunctionDir, "node_modules")); !os.IsNotExist(err) {
		t.Errorf("the failed install left node_modules: %v", err)
	}
}

// TestKeptDependenciesAreBounded: the cache keeps MaxKeptDeps sets, the
// least recently used going first.
func TestKeptDependenciesAreBounded(t *testing.T) {
	t.Parallel()
	opts := runtimes.BuildOptions{DepsCache: t.TempDir(), MaxKeptDeps: 2}
	for _, g := range []string{"a", "b", "a", "c"} { // a is used again, so b goes when c comes
		buildGreeter(t, g, opts)
	}
	if entries, _ := os.ReadDir(opts.DepsCache); len(entries) != 2 {
		t.Fatalf("the cache keeps %d sets, want 2", len(entries))
	}
	if _, ran := buildGreeter(t, "a", opts); ran {
		t.Error("a, used recently, was evicted")
	}
	if _, ran := buildGreeter(t, "b", opts); !ran {
		t.Error("b, the least recently used, was kept")
	}
}
