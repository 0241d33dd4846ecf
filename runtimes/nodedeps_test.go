package runtimes_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

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
