package runtimes_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/internal/testutil"
	"github.com/slessio/sless/runtimes"
)

// poolSamples answer what their process runs with: its variables' names,
// its working directory, a module found through the module path it was
// given (Python's PYTHONPATH; Node.js's own node_modules), and TZ's offset.
var poolSamples = map[string]map[string]string{
	"python3.11": {
		"function/handler.py": "import os\nimport time\n\nimport dep\n\n\ndef handle(event):\n" +
			"    return {\"env\": sorted(os.environ), \"cwd\": os.getcwd(), \"dep\": dep.NAME, \"tz\": time.timezone}\n",
		"deps/dep.py": "NAME = 'dep'\n",
	},
	"nodejs20": {
		"function/handler.js": "const dep = require('dep')\n" +
			"exports.handle = () => ({ env: Object.keys(process.env).sort(), cwd: process.cwd(), dep: dep.NAME,\n" +
			"  tz: new Date(Date.UTC(2024, 0, 1)).getTimezoneOffset() * 60 })\n",
		"function/node_modules/dep/index.js": "exports.NAME = 'dep'\n",
	},
}

// TestPoolMode runs each wrapper with a pool mode as a driver's warm pool
// does (unsandboxed, without a uid to switch to): it says it is ready, and
// given a function it serves it from the folder it is given, with the
// environment it is given and nothing of its own; given nothing (end of
// file) it exits 0.
func TestPoolMode(t *testing.T) {
	t.Parallel()
	for name, files := range poolSamples {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			rt, err := runtimes.Lookup(name)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			for file, content := range files {
				mustWrite(t, filepath.Join(dir, file), content)
			}
			p := startPooled(t, rt)
			env := []string{"PATH=" + os.Getenv("PATH"), "LANG=C.UTF-8", "SLESS_MODE=server", "NODE_ENV=production",
				"PYTHONIOENCODING=utf-8", "PYTHONPATH=" + filepath.Join(dir, "deps"), "TZ=UTC-2",
				"SLESS_ENTRYPOINT=handler.handle", "SLESS_LISTEN_FD=3", "OWN=1"}
			p.specialize(t, runtimes.Specialization{Dir: filepath.Join(dir, "function"), Env: env, UID: -1, GID: -1})
			var got struct {
				Env []string
				Cwd string
				Dep string
				TZ  int
			}
			resp, err := testutil.EndpointClient(10*time.Second, false).Get(testutil.EndpointURL("unix:"+p.socket) + "/")
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
				t.Fatal(err)
			}
			if want := filepath.Join(dir, "function"); got.Cwd != want || got.Dep != "dep" || got.TZ != -7200 {
				t.Errorf("cwd %q, dep %q, tz %d; want %q, dep, -7200 (TZ applied)", got.Cwd, got.Dep, got.TZ, want)
			}
			var names []string
			for _, kv := range env {
				name, _, _ := strings.Cut(kv, "=")
				names = append(names, name)
			}
			slices.Sort(names)
			if !slices.Equal(got.Env, names) {
				t.Errorf("environment %q, want exactly %q", got.Env, names)
			}
		})
		t.Run(name+"/let-go", func(t *testing.T) {
			t.Parallel()
			rt, _ := runtimes.Lookup(name)
			p := startPooled(t, rt)
			_ = p.conn.Close()
			select {
			case <-p.exited:
				if p.err != nil {
					t.Errorf("given nothing: %v, want exit 0", p.err)
				}
			case <-time.After(10 * time.Second):
				t.Error("given nothing, it did not exit")
			}
		})
	}
}

// pooledProcess is a wrapper started in pool mode.
type pooledProcess struct {
	conn   *net.UnixConn // the control socket's other end
	socket string        // where it listens
	exited chan struct{} // closed when it exited, with err
	err    error
}

// startPooled starts rt's wrapper in pool mode, as the local driver's
// warm pool does, and waits until it says it is ready.
func startPooled(t *testing.T, rt runtimes.Runtime) *pooledProcess {
	t.Helper()
	dir := t.TempDir()
	if err := rt.InstallPool(dir); err != nil {
		t.Fatal(err)
	}
	spec, err := rt.Command(dir, runtimes.ModePool)
	if err != nil {
		t.Fatal(err)
	}
	socket := filepath.Join(dir, "s.sock")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: socket, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	lnFile, err := ln.File()
	if err != nil {
		t.Fatal(err)
	}
	defer lnFile.Close()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	own, theirs := os.NewFile(uintptr(fds[0]), "control"), os.NewFile(uintptr(fds[1]), "control")
	defer theirs.Close()
	c, err := net.FileConn(own)
	own.Close()
	if err != nil {
		t.Fatal(err)
	}
	cmd := spec.Cmd(context.Background(), runtimes.EnvListenFD+"=3", runtimes.EnvControlFD+"=4")
	cmd.Dir = dir
	cmd.ExtraFiles = []*os.File{lnFile, theirs}
	cmd.Stderr = &testWriter{t: t}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &pooledProcess{conn: c.(*net.UnixConn), socket: socket, exited: make(chan struct{})}
	go func() { p.err = cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.exited
		ln.Close()
		p.conn.Close()
	})
	_ = p.conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	line, err := bufio.NewReader(p.conn).ReadString('\n')
	if err != nil || line != runtimes.PoolReady {
		t.Fatalf("the wrapper said %q, %v; want %q", line, err, runtimes.PoolReady)
	}
	return p
}

// specialize gives the process its function and waits until it is healthy.
func (p *pooledProcess) specialize(t *testing.T, s runtimes.Specialization) {
	t.Helper()
	msg, _ := json.Marshal(s)
	if _, err := p.conn.Write(append(msg, '\n')); err != nil {
		t.Fatal(err)
	}
	_ = p.conn.CloseWrite()
	client := testutil.EndpointClient(10*time.Second, false)
	resp, err := client.Get(testutil.EndpointURL("unix:"+p.socket) + "/_sless/health")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("health after the function loaded: %s", resp.Status)
	}
}

// testWriter logs what a process writes to the test's log.
type testWriter struct{ t *testing.T }

func (w *testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}

func mustWrite(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestPoolServes: a pooled process serves a function whose variables read
// at start are its own (Python's PYTHONPATH aside, which the wrapper
// applies), and no other; Go has no pool mode.
func TestPoolServes(t *testing.T) {
	t.Parallel()
	base := []string{"PATH=/usr/bin", "LANG=C.UTF-8", "SLESS_MODE=pool"}
	with := func(extra ...string) []string { return append(slices.Clone(base), extra...) }
	cases := []struct {
		runtime domain.Runtime
		env     []string
		serves  bool
	}{
		{domain.RuntimePython311, with("SLESS_MODE=server", "GREETING=hi", "TZ=UTC", "PYTHONPATH=/app/python-deps"), true},
		{domain.RuntimePython311, with("PYTHONHASHSEED=0"), false},
		{domain.RuntimePython311, with("LD_PRELOAD=/tmp/x.so"), false},
		{domain.RuntimePython311, with("LANG=de_DE.UTF-8"), false},
		{domain.RuntimeNodeJS20, with("NODE_ENV=development", "GREETING=hi"), true},
		{domain.RuntimeNodeJS20, with("NODE_OPTIONS=--max-old-space-size=256"), false},
		{domain.RuntimeNodeJS20, with("UV_THREADPOOL_SIZE=" + strconv.Itoa(16)), false},
		{domain.RuntimeGo123, base, false},
	}
	for _, c := range cases {
		if got := runtimes.Describe(c.runtime).PoolServes(base, c.env); got != c.serves {
			t.Errorf("%s, %q: PoolServes = %v, want %v", c.runtime, c.env[len(base):], got, c.serves)
		}
	}
}
