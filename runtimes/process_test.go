package runtimes_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/slessio/sless/internal/testutil"
	"github.com/slessio/sless/runtimes"
)

// workRoot holds the install directories shared by the tests of one run: a Go
// sample is built once and started by many tests.
var workRoot string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "sless-runtimes-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	workRoot = dir
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// client talks to the wrappers; keep-alive like the proxy.
var client = &http.Client{
	Timeout:   time.Minute,
	Transport: &http.Transport{MaxIdleConnsPerHost: 64, DisableCompression: true},
}

type preparation struct {
	once       sync.Once
	dir        string
	installErr error
	buildLog   string
	buildErr   error
}

var preparations sync.Map // "runtime/sample/entrypoint" → *preparation

// prepare copies testdata/<runtime>/<sample> to DIR/function, installs the runtime
// with entrypoint and builds it, once per test run. It returns DIR and the build's
// outcome; an install failure fails the test.
func prepare(tb testing.TB, runtime, sample, entrypoint string) (dir, buildLog string, buildErr error) {
	tb.Helper()
	v, _ := preparations.LoadOrStore(runtime+"/"+sample+"/"+entrypoint, &preparation{})
	p := v.(*preparation)
	p.once.Do(func() {
		rt, err := runtimes.Lookup(runtime)
		if err != nil {
			p.installErr = err
			return
		}
		p.dir, p.installErr = os.MkdirTemp(workRoot, runtime+"-"+sample+"-")
		if p.installErr != nil {
			return
		}
		if p.installErr = copyDir(filepath.Join("testdata", runtime, sample), filepath.Join(p.dir, runtimes.FunctionDir)); p.installErr != nil {
			return
		}
		if p.installErr = rt.Install(p.dir, entrypoint); p.installErr != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		p.buildLog, p.buildErr = rt.Build(ctx, p.dir, runtimes.BuildOptions{})
	})
	if p.installErr != nil {
		tb.Fatalf("prepare %s/%s: %v", runtime, sample, p.installErr)
	}
	return p.dir, p.buildLog, p.buildErr
}

// mustPrepare is prepare for a sample that must build.
func mustPrepare(tb testing.TB, runtime, sample, entrypoint string) string {
	tb.Helper()
	dir, log, err := prepare(tb, runtime, sample, entrypoint)
	if err != nil {
		tb.Fatalf("build %s/%s: %v\n%s", runtime, sample, err, log)
	}
	return dir
}

func mustCommand(tb testing.TB, runtime, dir string, mode runtimes.Mode) runtimes.Spec {
	tb.Helper()
	rt, err := runtimes.Lookup(runtime)
	if err != nil {
		tb.Fatal(err)
	}
	spec, err := rt.Command(dir, mode)
	if err != nil {
		tb.Fatalf("command %s: %v", runtime, err)
	}
	return spec
}

func copyDir(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
}

// process is a wrapper started in server mode, reached at url through client.
type process struct {
	url            string
	client         *http.Client
	socketInode    string // of the socket it serves on by SLESS_LISTEN_FD; "" on PORT
	cmd            *exec.Cmd
	stdout, stderr *testutil.SyncBuffer
	exited         chan struct{}
	started        time.Time
}

func freePort(tb testing.TB) int {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startProcess starts spec with PORT set to a free loopback port and env appended;
// the process is killed when the test ends.
func startProcess(tb testing.TB, spec runtimes.Spec, env ...string) *process {
	tb.Helper()
	return start(tb, spec, freePort(tb), nil, env)
}

// startWithFile starts spec with file, when not nil (it is closed once the process
// has it), as descriptor 3 and env appended. PORT is a loopback port the test holds open, so that a wrapper which binds
// it instead of using the descriptor fails to start. SLESS_LISTEN_FD is the caller's
// to set.
func startWithFile(tb testing.TB, spec runtimes.Spec, file *os.File, env ...string) *process {
	tb.Helper()
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = held.Close() })
	return start(tb, spec, held.Addr().(*net.TCPAddr).Port, file, env)
}

// startOnUnixSocket starts spec as the sandboxed local driver does: serving on a
// listening Unix socket it inherits as descriptor 3 (SLESS_LISTEN_FD=3), reachable only
// through that socket, as p.client dials it. PORT is held by the test (startWithFile),
// and p.url names it only for the Host header.
func startOnUnixSocket(tb testing.TB, spec runtimes.Spec, env ...string) *process {
	tb.Helper()
	dir, err := os.MkdirTemp("", "sless-sock-") // short: a socket path has at most 107 bytes
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = os.RemoveAll(dir) })
	path := filepath.Join(dir, "fn.sock")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		tb.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	file, err := ln.File()
	if err != nil {
		tb.Fatal(err)
	}
	_ = ln.Close() // the process's copy is the only one that accepts, as with the driver
	info, err := file.Stat()
	if err != nil {
		tb.Fatal(err)
	}
	p := startWithFile(tb, spec, file, append([]string{runtimes.EnvListenFD + "=3"}, env...)...)
	dialer := &net.Dialer{}
	p.client = &http.Client{
		Timeout: client.Timeout,
		Transport: &http.Transport{
			MaxIdleConnsPerHost: 64,
			DisableCompression:  true,
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				return dialer.DialContext(ctx, "unix", path)
			},
		},
	}
	tb.Cleanup(p.client.CloseIdleConnections)
	p.socketInode = strconv.FormatUint(info.Sys().(*syscall.Stat_t).Ino, 10)
	return p
}

// start starts spec with PORT=port, extra (when not nil, closed once started) as
// descriptor 3 and env appended; the process is killed when the test ends.
func start(tb testing.TB, spec runtimes.Spec, port int, extra *os.File, env []string) *process {
	tb.Helper()
	p := &process{
		url:    fmt.Sprintf("http://127.0.0.1:%d", port),
		client: client,
		stdout: &testutil.SyncBuffer{},
		stderr: &testutil.SyncBuffer{},
		exited: make(chan struct{}),
	}
	p.cmd = spec.Cmd(context.Background(), append([]string{fmt.Sprintf("PORT=%d", port)}, env...)...)
	p.cmd.Stdout, p.cmd.Stderr = p.stdout, p.stderr
	if extra != nil {
		p.cmd.ExtraFiles = []*os.File{extra}
		defer extra.Close()
	}
	p.started = time.Now()
	if err := p.cmd.Start(); err != nil {
		tb.Fatalf("start %s: %v", spec.Path, err)
	}
	go func() {
		_ = p.cmd.Wait()
		close(p.exited)
	}()
	tb.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.exited
	})
	return p
}

func (p *process) hasExited() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// health returns the status of /_sless/health, or 0 when nothing answers.
func (p *process) health() int {
	resp, err := p.client.Get(p.url + "/_sless/health")
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// waitReady waits until health answers 200, failing the test if the process exits.
func (p *process) waitReady(tb testing.TB) {
	tb.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if p.health() == http.StatusOK {
			return
		}
		if p.hasExited() {
			tb.Fatalf("process exited (%v) before it was ready; stderr:\n%s", p.cmd.ProcessState, p.stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	tb.Fatalf("not ready after a minute; stderr:\n%s", p.stderr.String())
}

// waitExit waits for the process to end and returns its exit code.
func (p *process) waitExit(tb testing.TB) int {
	tb.Helper()
	select {
	case <-p.exited:
		return p.cmd.ProcessState.ExitCode()
	case <-time.After(time.Minute):
		tb.Fatalf("still running after a minute; stderr:\n%s", p.stderr.String())
		return 0
	}
}

// processSockets returns the descriptors process pid holds on sockets, by the socket's
// inode, from /proc; ok is false where /proc does not tell (not Linux).
func processSockets(pid int) (fds map[string][]string, ok bool) {
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, false
	}
	fds = map[string][]string{}
	for _, e := range entries {
		link, err := os.Readlink(filepath.Join(dir, e.Name()))
		if inode, found := strings.CutPrefix(link, "socket:["); err == nil && found {
			inode = strings.TrimSuffix(inode, "]")
			fds[inode] = append(fds[inode], e.Name())
		}
	}
	return fds, true
}

// tcpListeners returns the local addresses of the TCP sockets in the LISTEN state that
// process pid holds, from /proc; ok is false where /proc does not tell.
func tcpListeners(pid int) (addrs []string, ok bool) {
	sockets, ok := processSockets(pid)
	if !ok {
		return nil, false
	}
	for _, table := range []string{"tcp", "tcp6"} {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/%s", pid, table))
		if err != nil {
			return nil, false
		}
		// sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
		for _, line := range strings.Split(string(data), "\n")[1:] {
			fields := strings.Fields(line)
			if len(fields) > 9 && fields[3] == "0A" && sockets[fields[9]] != nil {
				addrs = append(addrs, table+" "+fields[1])
			}
		}
	}
	return addrs, true
}

// closedOnExec reports whether descriptor fd of process pid is closed on exec, from
// /proc/<pid>/fdinfo.
func closedOnExec(tb testing.TB, pid int, fd string) bool {
	tb.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/fdinfo/%s", pid, fd))
	if err != nil {
		tb.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if value, found := strings.CutPrefix(line, "flags:"); found {
			flags, err := strconv.ParseUint(strings.TrimSpace(value), 8, 64)
			if err != nil {
				tb.Fatalf("fdinfo flags %q: %v", value, err)
			}
			return flags&syscall.O_CLOEXEC != 0
		}
	}
	tb.Fatalf("no flags in fdinfo of descriptor %s: %q", fd, data)
	return false
}

// jobResult is the outcome of one run in job mode.
type jobResult struct {
	stdout, stderr string
	code           int
	took           time.Duration
}

func runJob(tb testing.TB, spec runtimes.Spec, env ...string) jobResult {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := spec.Cmd(ctx, env...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		tb.Fatalf("run job: %v", err)
	}
	return jobResult{stdout: stdout.String(), stderr: stderr.String(), code: cmd.ProcessState.ExitCode(), took: time.Since(start)}
}

// lastLine returns the last line of output that ends in a newline.
func lastLine(tb testing.TB, out string) string {
	tb.Helper()
	if !strings.HasSuffix(out, "\n") {
		tb.Fatalf("output does not end a line: %q", out)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	return lines[len(lines)-1]
}
