package localdriver_test

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/driver"
	"github.com/slessio/sless/internal/testutil"
	"github.com/slessio/sless/localdriver"
	"github.com/slessio/sless/localdriver/sandbox/sandboxtest"
	"github.com/slessio/sless/runtimes/runtimestest"
	"github.com/slessio/sless/store/codestore/ziptest"
)

const ns = "sless-0123456789abcdef"

func TestBuildLayoutAndReuse(t *testing.T) {
	t.Parallel()
	e := setup(t, localdriver.Options{})
	w := e.mustBuild(t, ns, "hello", 3, pyConfig(nil), pyHello)
	if w.Image != "local:"+ns+"/hello/v3" {
		t.Fatalf("image = %q", w.Image)
	}
	vdir := filepath.Join(e.dir, "builds", ns, "hello", "v3")
	for _, f := range []string{"function/handler.py", "sless_wrapper.py", "sless-build.json"} {
		if _, err := os.Stat(filepath.Join(vdir, f)); err != nil {
			t.Errorf("build lacks %s: %v", f, err)
		}
	}
	// A partial directory from an interrupted build is cleaned up; the
	// finished build is reused as it is.
	stale := vdir + ".tmp-123"
	if err := os.MkdirAll(stale, 0o755); err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(vdir, "function", "marker")
	if err := os.WriteFile(marker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	w2 := e.mustBuild(t, ns, "hello", 3, pyConfig(nil), pyHello)
	if w2.Image != w.Image {
		t.Fatalf("rebuild image = %q, want %q", w2.Image, w.Image)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("rebuilding a built version did work again: %v", err)
	}
	// Other code under the same version number (a function deleted and
	// created again without cleanup) is built afresh.
	other := map[string]string{"handler.py": "def handle(event):\n    return 'other'\n"}
	e.mustBuild(t, ns, "hello", 3, pyConfig(nil), other)
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Fatalf("a build of other code reused the old directory: %v", err)
	}
	if m, _ := filepath.Glob(vdir + ".tmp-*"); len(m) > 0 {
		t.Fatalf("temporary build directories left: %v", m)
	}
}

// TestBuildPythonRequirements: pip installs a requirements.txt inside the
// build's sandbox into the version's own folder — a package from a local
// path in the zip and one from a vendored wheel, with no network — and the
// function's sandboxed process imports them; a requirement pip cannot
// satisfy fails the version with pip's message.
func TestBuildPythonRequirements(t *testing.T) {
	t.Parallel()
	e := setup(t, localdriver.Options{})
	wheel, wheelData := runtimestest.PyWheel(t, "tinywheel", "VALUE = 42\n")
	files := runtimestest.Prefixed("libs/mylib", runtimestest.PyPackage("mylib", "def greet(name):\n    return 'hello ' + name\n"))
	files["wheels/"+wheel] = string(wheelData)
	files["handler.py"] = "import mylib\nimport tinywheel\n\ndef handle(event):\n    return mylib.greet(str(tinywheel.VALUE))\n"
	files["requirements.txt"] = "--no-index\n--find-links wheels\n./libs/mylib\ntinywheel==1.0\n"
	w := e.mustBuild(t, ns, "reqs", 1, pyConfig(nil), files)
	if res := e.run(t, w, "{}"); res.ExitCode != 0 || lastLineOf(res.Stdout) != `"hello 42"` {
		t.Fatalf("job with dependencies: exit %d, stdout %q, stderr %q", res.ExitCode, res.Stdout, res.Stderr)
	}
	resp, err := fresh.Get(testutil.EndpointURL(e.mustDeploy(t, w)) + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || strings.TrimSpace(string(body)) != "hello 42" {
		t.Fatalf("served with dependencies: %d %q", resp.StatusCode, string(body))
	}
	// A code-only change reuses the installed dependencies: no pip.
	files["handler.py"] = "import mylib\nimport tinywheel\n\ndef handle(event):\n    return mylib.greet(str(tinywheel.VALUE + 1))\n"
	w, res := e.build(t, ns, "reqs", 4, pyConfig(nil), files)
	if res.Failed || !strings.HasPrefix(res.Log, "reused the dependencies") {
		t.Fatalf("code-only change: %+v", res)
	}
	if res := e.run(t, w, "{}"); res.ExitCode != 0 || lastLineOf(res.Stdout) != `"hello 43"` {
		t.Fatalf("job with reused dependencies: exit %d, stdout %q, stderr %q", res.ExitCode, res.Stdout, res.Stderr)
	}

	files["requirements.txt"] = "# web\n--no-index\nrequests==2.31.0\n"
	_, res = e.build(t, ns, "reqs", 2, pyConfig(nil), files)
	if !res.Failed || !strings.HasPrefix(res.Message, "pip install: Could not find a version that satisfies the requirement requests==2.31.0") {
		t.Fatalf("build with an unsatisfiable requirement = %+v", res)
	}
	// A requirements.txt that lists nothing is fine.
	plain := map[string]string{"handler.py": pyHello["handler.py"], "requirements.txt": "# nothing yet\n\n"}
	if _, res := e.build(t, ns, "reqs", 3, pyConfig(nil), plain); res.Failed {
		t.Fatalf("build with an empty requirements.txt failed: %s", res.Message)
	}
}

func TestBuildRefusesEscapingPaths(t *testing.T) {
	t.Parallel()
	e := setup(t, localdriver.Options{})
	for i, name := range []string{"../escaped.py", "/abs/escaped.py", `..\escaped.py`} {
		zipData := ziptest.Files(t, map[string]string{"handler.py": pyHello["handler.py"], name: "x"})
		obj := e.put(t, ns, "hostile", zipData)
		res, err := e.d.Build(context.Background(), driver.BuildSpec{Namespace: ns, Function: "hostile", Version: i + 1,
			Digest: obj.Digest + name, ZipKey: obj.ZipKey, Config: pyConfig(nil), Code: e.store})
		if err != nil || !res.Failed || !strings.Contains(res.Message, "zip entry") {
			t.Errorf("build of a zip with %q = %+v, %v; want a failed build", name, res, err)
		}
	}
	if m, _ := filepath.Glob(filepath.Join(e.dir, "builds", "*", "escaped.py")); len(m) > 0 {
		t.Fatalf("a zip wrote outside its directory: %v", m)
	}
	if _, err := os.Stat(filepath.Join(e.dir, "builds", ns, "escaped.py")); err == nil {
		t.Fatal("a zip wrote outside its directory")
	}
}

// TestDeployReusedImage runs version 2 from version 1's build, as the domain
// does for a configuration change, with version 2's variables.
func TestDeployReusedImage(t *testing.T) {
	t.Parallel()
	e := setup(t, localdriver.Options{})
	w1 := e.mustBuild(t, ns, "reuse", 1, pyConfig(map[string]string{"GREETING": "one"}), pyHello)
	w2 := w1
	w2.Version, w2.Config = 2, pyConfig(map[string]string{"GREETING": "two"})
	if h := mustHello(t, e.mustDeploy(t, w2)); h.Greeting != "two" {
		t.Fatalf("v2 on v1's build answers %+v", h)
	}
	res := e.run(t, w2, "{}")
	if !strings.Contains(res.Stdout, `"two"`) {
		t.Fatalf("job of v2 = %+v", res)
	}
}

func TestDeployErrors(t *testing.T) {
	t.Parallel()
	e := setup(t, localdriver.Options{})
	w := e.mustBuild(t, ns, "errs", 1, pyConfig(nil), pyHello)
	cases := []struct {
		name string
		w    driver.Workload
		code string
	}{
		{"image of another function", driver.Workload{Namespace: ns, Function: "other", Version: 1, Image: w.Image, Config: w.Config}, domain.EINVALID},
		{"foreign image", driver.Workload{Namespace: ns, Function: "errs", Version: 1, Image: "docker.io/library/python:3.11", Config: w.Config}, domain.EINVALID},
		{"version not built", driver.Workload{Namespace: ns, Function: "errs", Version: 2, Config: w.Config}, domain.EUNPROCESSABLE},
		{"bad namespace", driver.Workload{Namespace: "../etc", Function: "errs", Version: 1, Config: w.Config}, domain.EINVALID},
	}
	for _, c := range cases {
		if _, err := e.d.Deploy(context.Background(), driver.Deployment{Workload: c.w, Replicas: 1}); domain.ErrorCode(err) != c.code {
			t.Errorf("Deploy with %s = %v, want %s", c.name, err, c.code)
		}
		if _, err := e.d.Run(context.Background(), driver.RunSpec{Workload: c.w}); domain.ErrorCode(err) != c.code {
			t.Errorf("Run with %s = %v, want %s", c.name, err, c.code)
		}
	}
}

// TestSwitchStopsOldVersion checks what the suite cannot for every driver:
// the old process keeps answering during the drain, then stops.
func TestSwitchStopsOldVersion(t *testing.T) {
	t.Parallel()
	e := setup(t, localdriver.Options{Drain: 2 * time.Second})
	w1 := e.mustBuild(t, ns, "switch", 1, pyConfig(nil), pyHello)
	w2 := e.mustBuild(t, ns, "switch", 2, pyConfig(map[string]string{"GREETING": "v2"}), pyHello)
	old := e.mustDeploy(t, w1)
	oldInstance := mustHello(t, old).Instance
	switched := time.Now()
	next := e.mustDeploy(t, w2)
	if next == old {
		t.Fatal("the new version got the old endpoint")
	}
	if h := mustHello(t, old); h.Instance != oldInstance {
		t.Fatalf("old endpoint answered from process %d, want %d", h.Instance, oldInstance)
	}
	for {
		if _, err := getHello(old); err != nil {
			break // refused, or reset by the exiting process
		}
		if time.Since(switched) > 10*time.Second {
			t.Fatal("the old version still answers 10 s after the switch")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if took := time.Since(switched); took < 2*time.Second {
		t.Fatalf("the old version stopped %s after the switch, before the drain time", took)
	}
	waitGone(t, filepath.Join(e.dir, "builds", ns, "switch", "v1"))
	if _, err := getHello(old); !gone(err) {
		t.Fatalf("old endpoint after drain: %v, want no socket or connection refused", err)
	}
	if h := mustHello(t, next); h.Greeting != "v2" {
		t.Fatalf("new endpoint answers %+v", h)
	}
}

// waitGone waits until no process runs from below dir (see processesUnder):
// a closed port can precede that.
func waitGone(t *testing.T, dir string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for left := sandboxtest.Describe(dir); len(left) > 0; left = sandboxtest.Describe(dir) {
		if time.Now().After(deadline) {
			t.Fatalf("processes still run from %s: %v", dir, left)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestScaleToZeroRefusesConnections(t *testing.T) {
	t.Parallel()
	e := setup(t, localdriver.Options{})
	w := e.mustBuild(t, ns, "zero", 1, pyConfig(nil), pyHello)
	ep := e.mustDeploy(t, w)
	mustHello(t, ep)
	if len(sandboxtest.Describe(e.dir)) == 0 {
		t.Fatal("no process found running from the driver's directory")
	}
	if got, err := e.d.Deploy(context.Background(), driver.Deployment{Workload: w}); got != "" || err != nil {
		t.Fatalf("Replicas 0 = %q, %v", got, err)
	}
	// Deploy returns once the process is gone and its socket removed: no
	// polling needed.
	if _, err := getHello(ep); !gone(err) {
		t.Fatalf("after scale to zero: %v, want no socket or connection refused", err)
	}
	if left := sandboxtest.Describe(e.dir); len(left) > 0 {
		t.Fatalf("processes after scale to zero: %v", left)
	}
}

// TestCrashLoopClearedByScaleToZero: a crash-looped version is refused until
// the function is scaled to zero; then it is tried again.
func TestCrashLoopClearedByScaleToZero(t *testing.T) {
	t.Parallel()
	d, dir, failures := newDriver(t, localdriver.Options{CrashLoopRestarts: 3})
	e := env{d: d, dir: dir, store: newCodeStore(t)}
	files := map[string]string{"handler.py": `import os, sys, threading
def _die():
    sys.__stderr__.write("bye\n"); sys.__stderr__.flush(); os._exit(7)
threading.Timer(0.3, _die).start()
def handle(event):
    return {}
`}
	w := e.mustBuild(t, ns, "loop", 1, pyConfig(nil), files)
	e.mustDeploy(t, w)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := failures.Wait(ctx, ns, "loop"); err != nil {
		t.Fatal(err)
	}
	_, err := d.Deploy(context.Background(), driver.Deployment{Workload: w, Replicas: 1})
	if msg := domain.ErrorMessage(err); domain.ErrorCode(err) != domain.EUNPROCESSABLE || !strings.Contains(msg, "exit status 7") || !strings.Contains(msg, "bye") {
		t.Fatalf("Deploy after crash loop = %v", err)
	}
	if n := failures.Count(ns, "loop"); n != 1 {
		t.Fatalf("crash loop reported %d times, want 1", n)
	}
	if _, err := d.Deploy(context.Background(), driver.Deployment{Workload: w}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Deploy(context.Background(), driver.Deployment{Workload: w, Replicas: 1}); err != nil {
		t.Fatalf("Deploy after scale to zero = %v, want a fresh start", err)
	}
}

func TestMemoryLimit(t *testing.T) {
	t.Parallel()
	e := setup(t, localdriver.Options{})
	t.Run("python", func(t *testing.T) {
		t.Parallel()
		cfg := pyConfig(nil)
		cfg.MemoryMB = 64
		w := e.mustBuild(t, ns, "mem-py", 1, cfg, map[string]string{"handler.py": `
def handle(event):
    data = bytearray(event["mb"] << 20)
    return len(data) >> 20
`})
		if res := e.run(t, w, `{"mb": 32}`); res.ExitCode != 0 {
			t.Fatalf("32 MiB within memory_mb 64: exit %d\n%s", res.ExitCode, res.Stderr)
		}
		if res := e.run(t, w, `{"mb": 1024}`); res.ExitCode != 1 || !strings.Contains(res.Stderr, "MemoryError") {
			t.Fatalf("1 GiB with memory_mb 64: exit %d\n%.600s", res.ExitCode, res.Stderr)
		}
	})
	t.Run("nodejs", func(t *testing.T) {
		t.Parallel()
		cfg := domain.FunctionConfig{Runtime: domain.RuntimeNodeJS20, Entrypoint: "handler.handle", MemoryMB: 64, TimeoutSec: 60}
		w := e.mustBuild(t, ns, "mem-node", 1, cfg, map[string]string{"handler.js": `
exports.handle = async (event) => {
  const keep = []
  for (let i = 0; i < event.n; i++) keep.push({ i, s: 'x'.repeat(64) + i })
  return keep.length
}
`})
		if res := e.run(t, w, `{"n": 10000}`); res.ExitCode != 0 {
			t.Fatalf("a small heap: exit %d\n%s", res.ExitCode, res.Stderr)
		}
		// V8's own heap limit (--max-old-space-size) or, first, the
		// sandbox's memory limit for the whole process.
		if res := e.run(t, w, `{"n": 100000000}`); res.ExitCode == 0 ||
			!strings.Contains(res.Stderr, "heap out of memory") && !strings.Contains(res.Stderr, "out of memory (64 MiB") {
			t.Fatalf("a heap beyond memory_mb 64: exit %d\n%s", res.ExitCode, res.Stderr)
		}
	})
	t.Run("go", func(t *testing.T) {
		t.Parallel()
		cfg := domain.FunctionConfig{Runtime: domain.RuntimeGo123, Entrypoint: "Handle", MemoryMB: 64, TimeoutSec: 60}
		w := e.mustBuild(t, ns, "mem-go", 1, cfg, map[string]string{"handler.go": `package main

import (
	"context"
	"os"
)

// Handle allocates and touches event["mb"] MiB.
func Handle(ctx context.Context, event map[string]any) (any, error) {
	data := make([]byte, int(event["mb"].(float64))<<20)
	for i := 0; i < len(data); i += 4096 {
		data[i] = 1
	}
	return os.Getenv("GOMEMLIMIT"), nil
}
`})
		if res := e.run(t, w, `{"mb": 16}`); res.ExitCode != 0 || !strings.Contains(res.Stdout, `"64MiB"`) {
			t.Fatalf("16 MiB within memory_mb 64: exit %d\n%s\n%s", res.ExitCode, res.Stdout, res.Stderr)
		}
		// The Go runtime dies in more than one way when mmap fails ("out of
		// memory", "cannot allocate memory", even SIGSEGV): only the exit counts.
		if res := e.run(t, w, `{"mb": 1024}`); res.ExitCode == 0 {
			t.Fatalf("1 GiB with memory_mb 64 succeeded:\n%s", res.Stdout)
		}
	})
}

func TestJobOutputIsBounded(t *testing.T) {
	t.Parallel()
	e := setup(t, localdriver.Options{})
	w := e.mustBuild(t, ns, "chatty", 1, pyConfig(nil), map[string]string{"handler.py": `import sys
def handle(event):
    line = "x" * 1023 + "\n"
    for _ in range(3 * 1024):
        sys.stdout.write(line)
        sys.stderr.write(line)
    return "the end"
`})
	res := e.run(t, w, "{}")
	if res.ExitCode != 0 || lastLineOf(res.Stdout) != `"the end"` {
		t.Fatalf("exit %d, last line %q", res.ExitCode, lastLineOf(res.Stdout))
	}
	for name, out := range map[string]string{"stdout": res.Stdout, "stderr": res.Stderr} {
		if len(out) > localdriver.MaxOutput+100 || !strings.HasPrefix(out, "[sless: ") {
			t.Errorf("%s: %d bytes, starts %q; want at most %d and a note of what was dropped", name, len(out), out[:40], localdriver.MaxOutput)
		}
	}
}

func lastLineOf(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}

// TestJobLeavesNoChildren: what a job starts in the background dies with
// it: a child, a child in a session of its own (setsid), and a daemon (a
// grandchild whose parent exited).
func TestJobLeavesNoChildren(t *testing.T) {
	t.Parallel()
	e := setup(t, localdriver.Options{})
	w := e.mustBuild(t, ns, "forks", 1, pyConfig(nil), map[string]string{"handler.py": `import os
import subprocess


def handle(event):
    subprocess.Popen(["sleep", "300"])
    subprocess.Popen(["sleep", "301"], start_new_session=True)
    if os.fork() == 0:  # a daemon: fork, setsid, fork, the middle one exits
        os.setsid()
        if os.fork() == 0:
            os.execvp("sleep", ["sleep", "302"])
        os._exit(0)
    return "started"
`})
	res := e.run(t, w, "{}")
	if res.ExitCode != 0 {
		t.Fatalf("exit %d: %s", res.ExitCode, res.Stderr)
	}
	waitGone(t, e.dir)
}

// TestRemoveLeavesNoChildren: what a serving function starts in the
// background (a setsid child, a daemon) dies when the function is removed.
func TestRemoveLeavesNoChildren(t *testing.T) {
	t.Parallel()
	e := setup(t, localdriver.Options{})
	w := e.mustBuild(t, ns, "spawner", 1, pyConfig(nil), map[string]string{"handler.py": `import os
import subprocess


def handle(event):
    subprocess.Popen(["sleep", "301"], start_new_session=True)
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            os.execvp("sleep", ["sleep", "302"])
        os._exit(0)
    return {"instance": 1, "greeting": "spawned"}
`})
	if h := mustHello(t, e.mustDeploy(t, w)); h.Greeting != "spawned" {
		t.Fatalf("answer %+v", h)
	}
	// Both background processes run (the daemon's exec may lag the answer).
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		left := strings.Join(sandboxtest.Describe(e.dir), " ")
		if strings.Contains(left, "sleep 301") && strings.Contains(left, "sleep 302") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the setsid child and the daemon are not both running: %s", left)
		}
	}
	if err := e.d.Remove(context.Background(), ns, "spawner"); err != nil {
		t.Fatal(err)
	}
	waitGone(t, e.dir)
}

func TestCloseStopsEverything(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	d, err := localdriver.New(localdriver.Options{Dir: dir, StopGrace: time.Second, Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	e := env{d: d, dir: dir, store: newCodeStore(t)}
	w := e.mustBuild(t, ns, "closing", 1, pyConfig(nil), map[string]string{"handler.py": `import time
def handle(event):
    if event.get("sleep"):
        time.sleep(300)
    return "ok"
`})
	ep := e.mustDeploy(t, w)
	jobErr := make(chan error, 1)
	go func() {
		_, err := d.Run(context.Background(), driver.RunSpec{Workload: w, Event: []byte(`{"sleep": true}`)})
		jobErr <- err
	}()
	time.Sleep(500 * time.Millisecond)
	if err := d.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := <-jobErr; domain.ErrorCode(err) != domain.EUNAVAILABLE {
		t.Fatalf("a job interrupted by Close = %v, want EUNAVAILABLE (to run again later)", err)
	}
	if _, err := getHello(ep); !gone(err) {
		t.Fatalf("after Close: %v", err)
	}
	if left := sandboxtest.Describe(dir); len(left) > 0 {
		t.Fatalf("processes after Close: %v", left)
	}
	if _, err := d.Deploy(context.Background(), driver.Deployment{Workload: w, Replicas: 1}); domain.ErrorCode(err) != domain.EUNAVAILABLE {
		t.Fatalf("Deploy after Close = %v", err)
	}
}

// TestBuildLimits: the driver's build step limits reach the sandboxed
// install: a dependency that builds for a minute fails the version at the
// time limit, one bigger than the size limit fails it too.
func TestBuildLimits(t *testing.T) {
	t.Parallel()
	e := setup(t, localdriver.Options{BuildStepTimeout: 3 * time.Second, MaxDepsBytes: 100})
	slow := runtimestest.PyPackage("slowlib", "VALUE = 1\n")
	slow["sleep_seconds"] = "60"
	files := runtimestest.Prefixed("libs/slowlib", slow)
	files["handler.py"] = pyHello["handler.py"]
	files["requirements.txt"] = "--no-index\n./libs/slowlib\n"
	start := time.Now()
	_, res := e.build(t, ns, "limits", 1, pyConfig(nil), files)
	if !res.Failed || !strings.Contains(res.Message, "did not finish within the build step limit of 3s") || time.Since(start) > 40*time.Second {
		t.Fatalf("slow install: %+v after %s", res, time.Since(start))
	}
	// The size limit on a driver without the short time limit: on a loaded
	// machine even a quick pip install can take more than 3 s.
	e = setup(t, localdriver.Options{MaxDepsBytes: 100})
	delete(slow, "sleep_seconds")
	files = runtimestest.Prefixed("libs/slowlib", slow)
	files["handler.py"] = pyHello["handler.py"]
	files["requirements.txt"] = "--no-index\n./libs/slowlib\n"
	if _, res := e.build(t, ns, "limits", 2, pyConfig(nil), files); !res.Failed || !strings.Contains(res.Message, "more than the limit of 100 bytes") {
		t.Fatalf("big install: %+v", res)
	}
}

// gone reports whether a request failed because nothing serves the endpoint
// any more: its socket was removed, nothing accepts on it, or the process
// serving it is exiting.
func gone(err error) bool {
	// ECONNRESET: the exiting process closed its listener with the
	// connection in its backlog (seen in CI after the drain).
	return errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET)
}
