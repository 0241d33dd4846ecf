package workers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/driver"
	"github.com/slessio/sless/internal/testutil"
	"github.com/slessio/sless/localdriver"
	"github.com/slessio/sless/workers"
)

// handlerPy answers by event["action"] (jobs) or the request path (HTTP). At
// import it exits when the file named by $CRASH_MARKER exists, so the test
// can turn a running function into a crash loop.
const handlerPy = `import os
import sys
import time

if os.path.exists(os.environ.get("CRASH_MARKER", "/nonexistent")):
    sys.stderr.write("RuntimeError: refusing to start, marker present\n")
    sys.exit(4)


def handle(event):
    action = event.get("action") or event.get("_path", "/").strip("/")
    if action == "fail":
        raise ValueError("bad input: %s" % event.get("n"))
    if action == "sleep":
        time.sleep(60)
        return "woke"
    print("hello from python")
    return {"hello": "python", "n": event.get("n"), "pid": os.getpid()}
`

// TestLocalDriverEndToEnd runs a Python function for real through the
// workers and the local driver: build from the code store, rollout behind an
// http trigger, job success/failure/timeout, scale to zero, a crash loop
// reported through Watch, and cleanup.
func TestLocalDriverEndToEnd(t *testing.T) {
	t.Parallel()
	h := setup(t)
	st := codeStore(t)
	dir := t.TempDir()
	marker := filepath.Join(t.TempDir(), "crash")
	var w *workers.Workers
	ld, err := localdriver.New(localdriver.Options{
		Dir:               dir,
		Logger:            slog.New(slog.NewTextHandler(h.logs, nil)),
		Drain:             100 * time.Millisecond,
		StopGrace:         time.Second,
		RestartBackoff:    20 * time.Millisecond,
		MaxRestartBackoff: 100 * time.Millisecond,
		CrashLoopRestarts: 3,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = ld.Close(ctx)
	})
	w = h.start(func(c *workers.Config) { c.Driver, c.Code = ld, st })
	watch, stopWatch := context.WithCancel(context.Background())
	t.Cleanup(stopWatch)
	go ld.Watch(watch, driver.Reports{Crashed: func(ns, fn string) { _ = w.Rollout(context.Background(), ns, fn) }})

	spec := domain.FunctionSpec{Runtime: "python3.11", Entrypoint: "handler.handle", TimeoutSec: 2,
		EnvVars: map[string]string{"CRASH_MARKER": marker}}
	h.createFunction("py", spec)
	h.uploadCode("py", putCode(t, st, h.ns, "py", 1, map[string]string{"handler.py": handlerPy}, "sless/python3.11"))
	h.eventually(60*time.Second, func() error {
		if f := h.function("py"); f.ActiveVersion != 1 || f.Phase != domain.PhaseReady {
			return errorf("function %s, active v%d: %q", f.Phase, f.ActiveVersion, f.Message)
		}
		return nil
	})
	if v := h.version("py", 1); v.Image == "" {
		t.Fatalf("version 1 has no image: %+v", v)
	}

	// HTTP: an enabled trigger starts the process and records its endpoint.
	endpoint := h.servesPython(t, "py")

	// Jobs: result, failure with the traceback, timeout.
	h.createJob("ok", "py", map[string]any{"n": 7}, 1)
	h.createJob("bad", "py", map[string]any{"action": "fail", "n": 8}, 1)
	h.createJob("slow", "py", map[string]any{"action": "sleep"}, 1)
	var res struct {
		Hello string
		N     int
	}
	if j := h.finished("ok", 1); j.Phase != domain.JobPhaseSucceeded || json.Unmarshal([]byte(j.Message), &res) != nil || res.N != 7 {
		t.Fatalf("job ok = %s %q", j.Phase, j.Message)
	} else if !strings.Contains(j.Output, "hello from python") {
		t.Fatalf("job ok output %q lacks what the function printed", j.Output)
	}
	if j := h.finished("bad", 1); j.Phase != domain.JobPhaseFailed || !strings.Contains(j.Message, "ValueError: bad input: 8") {
		t.Fatalf("job bad = %s %q; want Failed with the traceback", j.Phase, j.Message)
	}
	if j := h.finished("slow", 1); j.Phase != domain.JobPhaseFailed || j.Message != "timed out after 2 s" {
		t.Fatalf("job slow = %s %q; want timed out after 2 s", j.Phase, j.Message)
	}

	// Scale to zero, and back.
	h.setTriggerEnabled("py-http", false)
	h.eventually(30*time.Second, func() error {
		if f, tr := h.function("py"), h.trigger("py-http"); f.Endpoint != "" || tr.Active {
			return errorf("endpoint %q, active %v after disabling", f.Endpoint, tr.Active)
		}
		return nil
	})
	if _, err := shortClient.Get(testutil.EndpointURL(endpoint) + "/"); err == nil {
		t.Fatalf("the function still answers at %s after scaling to zero", endpoint)
	}
	h.setTriggerEnabled("py-http", true)
	h.eventually(60*time.Second, func() error {
		if f := h.function("py"); f.Endpoint == "" {
			return errorf("no endpoint after enabling again")
		}
		return nil
	})

	// A crash loop of the running version: the driver reports it, the
	// rollout's Deploy reports it, and the function says why.
	if err := os.WriteFile(marker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	killServer(t, dir, h.ns)
	h.eventually(60*time.Second, func() error {
		if f := h.function("py"); f.Phase != domain.PhaseFailed || !strings.Contains(f.Message, "refusing to start") {
			return errorf("function %s %q; want Failed with the crash's stderr", f.Phase, f.Message)
		}
		return nil
	})
	if tr := h.trigger("py-http"); tr.Active {
		t.Fatal("the trigger of a crash-looping function is still active")
	}

	// Delete: cleanup stops everything and removes the builds and the code.
	h.deleteTrigger("py-http")
	h.deleteFunction("py")
	h.eventually(30*time.Second, func() error {
		if _, err := os.Stat(filepath.Join(dir, "builds", h.ns, "py")); !os.IsNotExist(err) {
			return errorf("builds still there (%v)", err)
		}
		return nil
	})
}

// killServer kills the function's server process so that the supervisor
// restarts it, which then crash-loops on the marker. The process is found
// by its build directory on its command line.
func killServer(t *testing.T, dir, ns string) {
	t.Helper()
	build := filepath.Join(dir, "builds", ns, "py")
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	killed := 0
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil || !strings.Contains(string(b), build) {
			continue
		}
		var pid int
		if _, err := fmt.Sscan(filepath.Base(filepath.Dir(p)), &pid); err != nil {
			continue
		}
		if proc, err := os.FindProcess(pid); err == nil && proc.Kill() == nil {
			killed++
		}
	}
	if killed == 0 {
		t.Skip("cannot find the function's process to kill (no /proc?)")
	}
}

// shortClient bounds the tests' requests to function processes, so a
// process that accepts and never answers fails the test instead of hanging it.
var shortClient = testutil.EndpointClient(30*time.Second, true)

func httpGet(t *testing.T, url string) string {
	t.Helper()
	resp, err := shortClient.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s (%v)", url, resp.StatusCode, b, err)
	}
	return string(b)
}

// servesPython enables an http trigger py-http of function fn (the
// python sample) and waits until its rollout recorded an endpoint that
// answers as the sample does, and returns that endpoint.
func (h *harness) servesPython(t *testing.T, fn string) string {
	t.Helper()
	h.createTrigger(fn+"-http", domain.TriggerHTTP, fn, "", true)
	var endpoint string
	h.eventually(60*time.Second, func() error {
		f, tr := h.function(fn), h.trigger(fn+"-http")
		if f.Endpoint == "" || !tr.Active {
			return errorf("endpoint %q, active %v, phase %s %q", f.Endpoint, tr.Active, f.Phase, f.Message)
		}
		endpoint = f.Endpoint
		return nil
	})
	var got struct{ Hello string }
	if err := json.Unmarshal([]byte(httpGet(t, testutil.EndpointURL(endpoint)+"/")), &got); err != nil || got.Hello != "python" {
		t.Fatalf("GET %s = %+v (%v)", endpoint, got, err)
	}
	return endpoint
}
