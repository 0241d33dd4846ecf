package runtimes_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/internal/testutil"
	"github.com/slessio/sless/runtimes"
	"github.com/slessio/sless/runtimes/runtimestest"
)

// TestBuildPythonRequirements: a requirements.txt installs, with real pip and
// no network, a package from a local path in the zip and one from a wheel
// vendored in wheels/, into the version's own python-deps folder, which the
// function imports from; a requirement pip cannot satisfy or a wrong hash
// fails the build with pip's own error first and leaves no python-deps.
func TestBuildPythonRequirements(t *testing.T) {
	t.Parallel()
	rt := mustLookup(t, "python3.11")
	dir := emptyInstallDir(t)
	fn := filepath.Join(dir, runtimes.FunctionDir)
	runtimestest.WriteFiles(t, fn, runtimestest.Prefixed("libs/mylib", runtimestest.PyPackage("mylib", "def greet(name):\n    return 'hello ' + name\n")))
	wheel, wheelData := runtimestest.PyWheel(t, "tinywheel", "VALUE = 42\n")
	runtimestest.WriteFiles(t, fn, map[string]string{"wheels/" + wheel: string(wheelData)})
	runtimestest.WriteFiles(t, fn, map[string]string{
		"handler.py":       "import mylib\nimport tinywheel\n\ndef handle(event):\n    return {'greeting': mylib.greet(event['name']), 'value': tinywheel.VALUE}\n",
		"requirements.txt": "# vendored: no index\n--no-index\n--find-links wheels\n./libs/mylib\ntinywheel==1.0\n",
	})
	if err := rt.Install(dir, "handler.handle"); err != nil {
		t.Fatal(err)
	}
	log, err := rt.Build(context.Background(), dir, runtimes.BuildOptions{})
	if err != nil {
		t.Fatalf("build: %v\n%s", err, log)
	}
	if !strings.Contains(log, "Successfully installed") {
		t.Errorf("build log %q does not show pip's install", log)
	}
	for _, pkg := range []string{"mylib", "tinywheel"} {
		if _, err := os.Stat(filepath.Join(dir, "python-deps", pkg, "__init__.py")); err != nil {
			t.Errorf("%s not installed into the version's python-deps: %v", pkg, err)
		}
	}
	got := runJob(t, mustCommand(t, "python3.11", dir, runtimes.ModeJob), entry("handler.handle"), `SLESS_EVENT={"name": "sless"}`)
	if got.code != 0 {
		t.Fatalf("exit %d: %s", got.code, got.stderr)
	}
	var result map[string]any
	if err := json.Unmarshal([]byte(lastLine(t, got.stdout)), &result); err != nil || result["greeting"] != "hello sless" || result["value"] != 42.0 {
		t.Fatalf("result %q (%v)", got.stdout, err)
	}

	// The right hash installs in hash-checking mode; a wrong one fails.
	sum := sha256.Sum256(wheelData)
	runtimestest.WriteFiles(t, fn, map[string]string{"requirements.txt": "--no-index\n--find-links wheels\ntinywheel==1.0 --hash=sha256:" + hex.EncodeToString(sum[:]) + "\n"})
	if log, err := rt.Build(context.Background(), dir, runtimes.BuildOptions{}); err != nil {
		t.Fatalf("build with the wheel's hash: %v\n%s", err, log)
	}
	runtimestest.WriteFiles(t, fn, map[string]string{"requirements.txt": "--no-index\n--find-links wheels\ntinywheel==1.0 --hash=sha256:" + strings.Repeat("0", 64) + "\n"})
	_, err = rt.Build(context.Background(), dir, runtimes.BuildOptions{})
	testutil.RequireCode(t, err, domain.EUNPROCESSABLE, "pip install: THESE PACKAGES DO NOT MATCH THE HASHES")
	if _, serr := os.Stat(filepath.Join(dir, "python-deps")); !os.IsNotExist(serr) {
		t.Errorf("a failed install left python-deps: %v", serr)
	}

	runtimestest.WriteFiles(t, fn, map[string]string{"requirements.txt": "--no-index\nnosuchpkg==1.0\n"})
	_, err = rt.Build(context.Background(), dir, runtimes.BuildOptions{})
	testutil.RequireCode(t, err, domain.EUNPROCESSABLE, "pip install: Could not find a version that satisfies the requirement nosuchpkg==1.0")
	if !strings.HasPrefix(domain.ErrorMessage(err), "pip install: Could not find") {
		t.Errorf("pip's error line is not first: %v", err)
	}

	// A requirements.txt that lists nothing installs nothing.
	runtimestest.WriteFiles(t, fn, map[string]string{"requirements.txt": "# nothing yet\n\n"})
	if log, err := rt.Build(context.Background(), dir, runtimes.BuildOptions{}); err != nil || log != "" {
		t.Fatalf("build with an empty requirements.txt: %v %q", err, log)
	}
}

// TestPipFailureSaysWhy: a requirement pip cannot install from the index
// fails the build with pip's ERROR line first, the retries of an index that
// cannot be reached folded into one line (the build log keeps each), and
// where pip installs from and how to vendor wheels instead. The indexes are
// this machine's (a closed port, a server answering 500, one without the
// package), given in requirements.txt as the operator's would be, so that
// the tests run in parallel.
func TestPipFailureSaysWhy(t *testing.T) {
	t.Parallel()
	wheel, wheelData := runtimestest.PyWheel(t, "tinywheel", "VALUE = 42\n")
	index := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/simple/tinywheel/":
			fmt.Fprintf(w, `<a href="/files/%s">%s</a>`, wheel, wheel)
		case "/files/" + wheel:
			_, _ = w.Write(wheelData)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(index.Close)
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "down", http.StatusInternalServerError)
	}))
	t.Cleanup(failing.Close)
	closed := fmt.Sprintf("http://127.0.0.1:%d/simple", freePort(t))
	const viaIndex = "sless: pip installs from the package index the operator sets in SLESS_PIP_INDEX_URL (PyPI when unset); " +
		"if that index cannot be reached or lacks a package, vendor the wheels in the upload: " +
		"pip download -d wheels -r requirements.txt, then start requirements.txt with --no-index --find-links wheels"
	for _, tc := range []struct {
		name, requirements string
		want               []string // the message's first lines
		retries            int      // in the build log
	}{
		{"index_refuses", "--index-url " + closed + "\nsless-nosuchpkg==1.0\n", []string{
			"pip install: Could not find a version that satisfies the requirement sless-nosuchpkg==1.0 (from versions: none)",
			"pip retried 5 times to reach " + closed + ": Connection refused",
			viaIndex}, 5},
		{"index_answers_500", "--index-url " + failing.URL + "/simple\nsless-nosuchpkg==1.0\n", []string{
			"pip install: Could not find a version that satisfies the requirement sless-nosuchpkg==1.0 (from versions: none)",
			viaIndex}, 0},
		{"not_on_the_index", "--index-url " + index.URL + "/simple\ntinywheel==1.0\nsless-nosuchpkg==1.0\n", []string{
			"pip install: Could not find a version that satisfies the requirement sless-nosuchpkg==1.0 (from versions: none)",
			viaIndex}, 0},
		{"not_vendored", "--no-index\n--find-links wheels\nsless-nosuchpkg==1.0\n", []string{
			"pip install: Could not find a version that satisfies the requirement sless-nosuchpkg==1.0 (from versions: none)",
			"sless: with --no-index pip installs only from the wheels the upload vendors (--find-links wheels): " +
				"put the wheel of every requirement, and of what it requires, in wheels/"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rt := mustLookup(t, "python3.11")
			dir := emptyInstallDir(t)
			runtimestest.WriteFiles(t, filepath.Join(dir, runtimes.FunctionDir), map[string]string{
				"handler.py": "def handle(event):\n    return 1\n", "requirements.txt": tc.requirements})
			if err := rt.Install(dir, "handler.handle"); err != nil {
				t.Fatal(err)
			}
			// Home: pip in a clean environment (not this machine's PIP_FIND_LINKS).
			log, err := rt.Build(context.Background(), dir, runtimes.BuildOptions{Home: t.TempDir()})
			testutil.RequireCode(t, err, domain.EUNPROCESSABLE)
			msg := domain.ErrorMessage(err)
			if lines := strings.Split(msg, "\n"); len(lines) <= len(tc.want) || !slices.Equal(lines[:len(tc.want)], tc.want) {
				t.Errorf("message\n%s\nwant it to start with\n%s", msg, strings.Join(tc.want, "\n"))
			}
			if strings.Contains(msg, "WARNING: Retrying") || tc.retries == 0 && strings.Contains(msg, "pip retried") {
				t.Errorf("the message carries pip's retries:\n%s", msg)
			}
			if got := strings.Count(log, "WARNING: Retrying ("); got != tc.retries {
				t.Errorf("the build log has %d retry warnings, want %d:\n%s", got, tc.retries, log)
			}
			if !strings.Contains(msg, "ERROR: No matching distribution found for sless-nosuchpkg==1.0") {
				t.Errorf("the message lost pip's output:\n%s", msg)
			}
		})
	}
}

// TestBuildStepLimits: a dependency install that outlasts the step's time
// limit, or installs more than the size limit, fails the build with the limit
// in the message and leaves no python-deps.
func TestBuildStepLimits(t *testing.T) {
	t.Parallel()
	rt := mustLookup(t, "python3.11")
	for _, tc := range []struct {
		name string
		opts runtimes.BuildOptions
		pkg  map[string]string
		want string
	}{
		{"time", runtimes.BuildOptions{StepTimeout: 2 * time.Second},
			map[string]string{"sleep_seconds": "60"}, "pip install did not finish within the build step limit of 2s"},
		{"size", runtimes.BuildOptions{MaxDepsBytes: 100},
			map[string]string{}, "pip install installed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := emptyInstallDir(t)
			fn := filepath.Join(dir, runtimes.FunctionDir)
			pkg := runtimestest.PyPackage("mylib", "VALUE = 1\n")
			for k, v := range tc.pkg {
				pkg[k] = v
			}
			runtimestest.WriteFiles(t, fn, runtimestest.Prefixed("libs/mylib", pkg))
			runtimestest.WriteFiles(t, fn, map[string]string{"handler.py": "def handle(event):\n    return 1\n",
				"requirements.txt": "--no-index\n./libs/mylib\n"})
			if err := rt.Install(dir, "handler.handle"); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			_, err := rt.Build(context.Background(), dir, tc.opts)
			testutil.RequireCode(t, err, domain.EUNPROCESSABLE, tc.want)
			if took := time.Since(start); took > 30*time.Second {
				t.Errorf("the build took %s: the limit did not stop it", took)
			}
			if _, serr := os.Stat(filepath.Join(dir, "python-deps")); !os.IsNotExist(serr) {
				t.Errorf("the failed build left python-deps: %v", serr)
			}
		})
	}
}

// TestPythonDependenciesAreReused: a second version with the same
// dependency files (other code) gets a copy of the first one's installed
// dependencies and runs no pip; a changed vendored wheel installs again.
func TestPythonDependenciesAreReused(t *testing.T) {
	t.Parallel()
	rt := mustLookup(t, "python3.11")
	cache := t.TempDir()
	wheel, wheelData := runtimestest.PyWheel(t, "tinywheel", "VALUE = 42\n")
	version := func(handler string, files map[string]string) (dir string, tools []string) {
		dir = emptyInstallDir(t)
		fn := filepath.Join(dir, runtimes.FunctionDir)
		runtimestest.WriteFiles(t, fn, runtimestest.Prefixed("libs/mylib", runtimestest.PyPackage("mylib", "def greet(name):\n    return 'hello ' + name\n")))
		runtimestest.WriteFiles(t, fn, map[string]string{"handler.py": handler, "wheels/" + wheel: string(wheelData),
			"requirements.txt": "--no-index\n--find-links wheels\n./libs/mylib\ntinywheel==1.0\n"})
		runtimestest.WriteFiles(t, fn, files)
		if err := rt.Install(dir, "handler.handle"); err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		opts := runtimes.BuildOptions{DepsCache: cache, Runner: func(ctx context.Context, tool runtimes.Tool) ([]byte, error) {
			mu.Lock()
			tools = append(tools, tool.Name)
			mu.Unlock()
			return runtimes.LocalRunner(ctx, tool)
		}}
		if log, err := rt.Build(context.Background(), dir, opts); err != nil {
			t.Fatalf("build: %v\n%s", err, log)
		}
		return dir, tools
	}
	_, tools := version("import mylib\n\ndef handle(event):\n    return mylib.greet('one')\n", nil)
	if !slices.Contains(tools, "pip install") {
		t.Fatalf("the first version ran %v, want pip install", tools)
	}
	dir, tools := version("import mylib, tinywheel\n\ndef handle(event):\n    return mylib.greet(str(tinywheel.VALUE))\n", nil)
	if slices.Contains(tools, "pip install") {
		t.Fatalf("a code-only change ran pip again: %v", tools)
	}
	got := runJob(t, mustCommand(t, "python3.11", dir, runtimes.ModeJob), entry("handler.handle"), `SLESS_EVENT={}`)
	if got.code != 0 || lastLine(t, got.stdout) != `"hello 42"` {
		t.Fatalf("the version with reused dependencies: exit %d, %q %q", got.code, got.stdout, got.stderr)
	}
	other, otherData := runtimestest.PyWheel(t, "tinywheel", "VALUE = 43\n")
	if _, tools := version("def handle(event):\n    return 1\n", map[string]string{"wheels/" + other: string(otherData)}); !slices.Contains(tools, "pip install") {
		t.Fatalf("a changed wheel did not install again: %v", tools)
	}
}

// TestMissingModuleSaysWhatToDo: a function importing a package it did not
// list (its own file being there) fails its build with what to do, and for
// psycopg2 why the base image differs from a local build.
func TestMissingModuleSaysWhatToDo(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		runtime, file, code, want string
		more                      map[string]string
	}{
		{"python3.11", "handler.py", "import nosuchmodule_sless\n\ndef handle(event):\n    return 1\n",
			`the module "nosuchmodule_sless" is not installed: list its package in requirements.txt`, nil},
		{"python3.11", "handler.py", "import psycopg2\n\ndef handle(event):\n    return 1\n",
			"the Kubernetes base image ships it, but local builds use the machine's python3", nil},
		{"python3.11", "handler.py", "import lib.helpers\n\ndef handle(event):\n    return 1\n",
			`the module "lib.helpers" is not in the upload: lib/helpers.py (or a lib/helpers/ package) is missing`,
			map[string]string{"lib/__init__.py": ""}},
		{"nodejs20", "handler.js", "const pad = require('@sless-test/no-such-package/sub')\nexports.handle = () => 1\n",
			`the package "@sless-test/no-such-package" is not installed: list it in package.json's dependencies`, nil},
	} {
		rt := mustLookup(t, tc.runtime)
		dir := emptyInstallDir(t)
		runtimestest.WriteFiles(t, filepath.Join(dir, runtimes.FunctionDir), map[string]string{tc.file: tc.code})
		runtimestest.WriteFiles(t, filepath.Join(dir, runtimes.FunctionDir), tc.more)
		if err := rt.Install(dir, "handler.handle"); err != nil {
			t.Fatal(err)
		}
		_, err := rt.Check(context.Background(), dir, runtimes.BuildOptions{Env: []string{"SLESS_ENTRYPOINT=handler.handle"}})
		if strings.Contains(tc.code, "psycopg2") && err == nil {
			continue // this machine's python3 has psycopg2 after all
		}
		testutil.RequireCode(t, err, domain.EUNPROCESSABLE, tc.want)
		if strings.Contains(err.Error(), "the entrypoint handler.handle names") {
			t.Errorf("a module the code imports is taken for the entrypoint's: %v", err)
		}
	}
}
