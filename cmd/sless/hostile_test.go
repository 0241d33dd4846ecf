package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/slessio/sless/httpapi/auth"
	"github.com/slessio/sless/httpapi/client"
	"github.com/slessio/sless/internal/testutil"
	"github.com/slessio/sless/runtimes/runtimestest"
	"github.com/slessio/sless/store/codestore/s3embed"
	"github.com/slessio/sless/store/codestore/ziptest"
)

// The hostile-tenant suite: tenant B's function, job run and build step try
// each way to another tenant, to the platform and to the host that a probe
// of an earlier version found open, and must fail at every one; the paths
// the operator opened must work. Every packet goes to this machine's own
// addresses (loopback, its interfaces) or stays in a sandbox: what must be
// blocked on the way out (cloud metadata, private ranges, the internet) is
// tested in a lab of network namespaces by localdriver/sandbox/egress.

// probeModule runs a tenant's probes (see probeEvent) and returns what got
// through: "reached" lists blocked targets it could connect to (must stay
// empty), "allowed" what each opened target answered, "userns" whether a
// nested user namespace could be made, "files" what opening each platform
// path gave, "sockets" what connecting to another function's socket gave.
const probeModule = `import ctypes
import errno
import os
import socket


def _errname(e):
    return errno.errorcode.get(e.errno, str(e)) if e.errno else str(e)


def _connect(target, timeout):
    host, port = target.rsplit(":", 1)
    return socket.create_connection((host, int(port)), timeout=timeout)


def reached(targets):
    out = []
    for t in targets:
        try:
            _connect(t, 1.5).close()
            out.append(t)
        except OSError:
            pass
    return out


def answer(target):
    try:
        s = _connect(target, 3)
    except OSError as e:
        return "refused: " + _errname(e)
    try:
        s.settimeout(1)
        return "ok: " + s.makefile("rb").readline().decode().strip()
    except OSError:
        return "ok: "  # a server that waits for the client to speak (HTTP)
    finally:
        s.close()


def nested_userns():
    # In a child of its own: unshare(CLONE_NEWUSER) refuses a process with
    # threads (EINVAL) whatever the sandbox does, and servers have threads.
    pid = os.fork()
    if pid == 0:
        libc = ctypes.CDLL(None, use_errno=True)
        os._exit(0 if libc.unshare(0x10000000) == 0 else ctypes.get_errno())  # CLONE_NEWUSER
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    if code == 0:
        return "created"
    return "refused: " + errno.errorcode.get(code, str(code))


def open_each(paths):
    out = {}
    for p in paths:
        try:
            with open(p, "rb") as f:
                f.read(1)
            out[p] = "read"
        except OSError as e:
            out[p] = _errname(e)
    return out


def connect_each(paths):
    out = {}
    for p in paths:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.connect(p)
            out[p] = "connected"
        except OSError as e:
            out[p] = _errname(e)
        finally:
            s.close()
    return out


def run(event):
    return {
        "reached": reached(event.get("blocked", [])),
        "allowed": {t: answer(t) for t in event.get("allowed", [])},
        "userns": nested_userns(),
        "files": open_each(event.get("files", [])),
        "sockets": connect_each(event.get("sockets", [])),
        "platform_env": sorted(k for k in os.environ if k.startswith(("S3_", "DATABASE", "SLESS_JWT", "PG"))),
    }
`

// probeEvent is what a probe is asked to try.
type probeEvent struct {
	Blocked []string `json:"blocked"` // host:port that must not connect
	Allowed []string `json:"allowed"` // host:port that must answer
	Files   []string `json:"files"`   // platform files that must not open
	Sockets []string `json:"sockets"` // other functions' sockets that must not connect
}

// probeResult is what probeModule's run returns.
type probeResult struct {
	Reached     []string          `json:"reached"`
	Allowed     map[string]string `json:"allowed"`
	UserNS      string            `json:"userns"`
	Files       map[string]string `json:"files"`
	Sockets     map[string]string `json:"sockets"`
	PlatformEnv []string          `json:"platform_env"`
}

// check fails t for everything that got through, and for allowed targets
// that did not answer want.
func (r probeResult) check(t *testing.T, who string, allowed map[string]string) {
	t.Helper()
	if len(r.Reached) > 0 {
		t.Errorf("%s reached %d blocked targets: %v", who, len(r.Reached), r.Reached)
	}
	for target, want := range allowed {
		if got := r.Allowed[target]; !strings.HasPrefix(got, want) {
			t.Errorf("%s: %s answered %q, want %q", who, target, got, want)
		}
	}
	if r.UserNS != "refused: EPERM" {
		t.Errorf("%s made a nested user namespace: %s", who, r.UserNS)
	}
	for path, got := range r.Files {
		if got != "ENOENT" {
			t.Errorf("%s: opening the platform's %s gave %s, want ENOENT (not in the sandbox)", who, path, got)
		}
	}
	for path, got := range r.Sockets {
		if got != "ENOENT" {
			t.Errorf("%s: connecting to another function's socket %s gave %s, want ENOENT", who, path, got)
		}
	}
	if len(r.PlatformEnv) > 0 {
		t.Errorf("%s sees the platform's variables %v", who, r.PlatformEnv)
	}
}

func TestHostileTenant(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end")
	}
	if os.Geteuid() != 0 {
		t.Skip("the egress policy is enforced whole only as root (see egress.Network.Enforced); run as root")
	}
	// Not parallel: the package index is the process's environment.
	wheelName, wheel := runtimestest.PyWheel(t, "tinywheel", "VALUE = 42\n")
	index := startIndex(t, wheelName, wheel)
	allowed := serveLine(t, "an allowed host service")
	t.Setenv("SLESS_PIP_INDEX_URL", index.url+"/simple")
	dev := startDevWith(t, "--egress-allow", allowed)
	dev.waitReady(t)
	ctx := context.Background()
	a := tenantClient(t, dev, "tenant-a")
	b := tenantClient(t, dev, "tenant-b")

	// Tenant A: a function with a secret in its environment, served.
	deploy(t, a, client.CreateFunctionRequest{Name: "victim", Runtime: "python3.11", EnvVars: map[string]string{"SECRET": "a-secret"}},
		map[string]string{"handler.py": "import os\n\ndef handle(event):\n    return {'victim': True}\n"})
	serve(t, a, "victim")
	if got := call(t, dev, a, "victim", "{}"); !strings.Contains(got, `"victim"`) {
		t.Fatalf("A's function: %s", got)
	}

	// Everything this machine listens on, at every address a sandbox could
	// try for it: its own 127.0.0.1 (the host's only when opened), slirp's
	// gateway (the host's loopback), and the machine's own addresses.
	_, allowedPort, _ := net.SplitHostPort(allowed)
	var event probeEvent
	for _, port := range listeningPorts(t) {
		for _, host := range append([]string{"127.0.0.1", "10.0.2.2"}, hostAddresses(t)...) {
			target := net.JoinHostPort(host, port)
			if port == allowedPort && (host == "127.0.0.1" || host == "10.0.2.2") {
				continue
			}
			event.Blocked = append(event.Blocked, target)
		}
	}
	if len(event.Blocked) < 6 {
		t.Fatalf("found too few ports to try: %v", event.Blocked)
	}
	event.Files = []string{filepath.Join(dev.dataDir, s3embed.CredentialsFile), filepath.Join(dev.dataDir, auth.DevKeyFile),
		filepath.Join(dev.dataDir, "sandbox", "uids.json"), filepath.Join(dev.dataDir, "local", "builds")}
	event.Sockets, _ = filepath.Glob(filepath.Join(dev.dataDir, "local", "sock", "*.sock"))
	if len(event.Sockets) == 0 {
		t.Fatal("A's function serves on no socket of the data dir")
	}
	fnAllowed := map[string]string{allowed: "ok: an allowed host service", index.host: "ok: "}
	event.Allowed = []string{allowed, index.host}

	// B's function installs a dependency from the operator's package index
	// (a build step reaching it) and probes when called.
	deploy(t, b, client.CreateFunctionRequest{Name: "probe", Runtime: "python3.11", TimeoutSec: 120},
		map[string]string{"requirements.txt": "tinywheel==1.0\n", "probe.py": probeModule,
			"handler.py": "import probe\nimport tinywheel\n\ndef handle(event):\n    return probe.run(event)\n"})
	if index.hits("/files/"+wheelName) == 0 {
		t.Fatalf("the build did not install from the package index (hits: %v)", index.all())
	}

	t.Run("function", func(t *testing.T) {
		serve(t, b, "probe")
		body, _ := json.Marshal(event)
		var r probeResult
		if err := json.Unmarshal([]byte(call(t, dev, b, "probe", string(body))), &r); err != nil {
			t.Fatal(err)
		}
		// An allowed service answers; the package index is a build's only.
		fnAllowed[index.host] = "refused"
		r.check(t, "B's function", fnAllowed)
	})

	t.Run("job", func(t *testing.T) {
		body, _ := json.Marshal(event)
		if _, err := b.CreateJob(ctx, client.CreateJobRequest{Name: "probe-job", Function: "probe", Event: body, RunID: 1}); err != nil {
			t.Fatal(err)
		}
		var job *client.Job
		testutil.WaitFor(t, 2*time.Minute, func() bool {
			var err error
			job, err = b.GetJob(ctx, "probe-job")
			return err == nil && (job.Phase == "Succeeded" || job.Phase == "Failed")
		})
		var r probeResult
		if err := json.Unmarshal([]byte(job.Message), &r); job.Phase != "Succeeded" || err != nil {
			t.Fatalf("job %s: %v: %s", job.Phase, err, job.Message)
		}
		r.check(t, "B's job", map[string]string{allowed: "ok: an allowed host service", index.host: "refused"})
	})

	t.Run("build step", func(t *testing.T) {
		// A package whose build runs the probe and fails with its result.
		// The package index is the one thing a build step may reach.
		build := event
		build.Blocked = slices.DeleteFunc(slices.Clone(event.Blocked), func(target string) bool {
			_, port, _ := net.SplitHostPort(target)
			host, _, _ := net.SplitHostPort(target)
			return port == index.port() && (host == "127.0.0.1" || host == "10.0.2.2")
		})
		targets, _ := json.Marshal(build)
		files := map[string]string{"handler.py": "def handle(event):\n    return 1\n", "requirements.txt": "./probepkg\n",
			"probepkg/pyproject.toml":   "[build-system]\nrequires = []\nbuild-backend = \"probe_backend\"\nbackend-path = [\".\"]\n\n[project]\nname = \"probepkg\"\nversion = \"1.0\"\n",
			"probepkg/probe.py":         probeModule,
			"probepkg/targets.json":     string(targets),
			"probepkg/probe_backend.py": "import json\nimport probe\n\n\ndef _run(*args, **kwargs):\n    with open('targets.json') as f:\n        result = probe.run(json.load(f))\n    raise RuntimeError('<<PROBE' + '>>' + json.dumps(result) + '<<END' + '>>')\n\n\nprepare_metadata_for_build_wheel = build_wheel = _run\n",
		}
		v := upload(t, b, "probe", files)
		ver := waitBuilt(t, b, "probe", v)
		log := ver.Message
		if ver.BuildLog != nil {
			log = *ver.BuildLog // whole, where the message is cut short
		}
		// The markers are split in the backend's source, which pip shows too.
		start, end := strings.LastIndex(log, "<<PROBE>>"), strings.LastIndex(log, "<<END>>")
		if start < 0 || end < start {
			t.Fatalf("the build step did not report (version %s): %.3000s", ver.BuildStatus, log)
		}
		var r probeResult
		if err := json.Unmarshal([]byte(log[start+len("<<PROBE>>"):end]), &r); err != nil {
			t.Fatalf("%v in %q", err, log[start:end])
		}
		// A build reaches its package index and nothing else: not even
		// what functions are allowed.
		r.check(t, "B's build step", map[string]string{index.host: "ok: ", allowed: "refused"})
	})

	t.Run("code store", func(t *testing.T) {
		// The keys are the data dir's own, readable by the platform only.
		path := filepath.Join(dev.dataDir, s3embed.CredentialsFile)
		uid := tenantUID(t, dev, b.Namespace())
		out, err := exec.Command("setpriv", "--reuid="+uid, "--regid="+uid, "--clear-groups", "cat", path).CombinedOutput()
		if err == nil || !strings.Contains(string(out), "Permission denied") {
			t.Fatalf("B's uid %s reading %s: %v %s", uid, path, err, out)
		}
		// With stolen keys, B overwrites A's code in the store: A's source
		// is then refused, never shown as A's.
		access, secret, err := s3embed.LoadOrCreateCredentials(dev.dataDir)
		if err != nil {
			t.Fatal(err)
		}
		tamper(t, dev, access, secret, a.Namespace(), "victim", ziptest.Files(t, map[string]string{"handler.py": "def handle(event):\n    return 'B was here'\n"}))
		src, err := a.Source(ctx, "victim", 0)
		if err == nil {
			t.Fatalf("A's tampered source was served: %+v", src)
		}
		if !strings.Contains(err.Error(), "does not match") {
			t.Errorf("A's tampered source: %v; want it refused as not matching its digest", err)
		}
	})

	t.Run("memory", func(t *testing.T) {
		deploy(t, b, client.CreateFunctionRequest{Name: "hog", Runtime: "python3.11", MemoryMB: 128, TimeoutSec: 60},
			map[string]string{"handler.py": hogHandler})
		serve(t, b, "hog")
		// Eight children of 40 MiB each: together they may not pass 128 MiB.
		var r struct{ Alive, Killed int }
		if err := json.Unmarshal([]byte(call(t, dev, b, "hog", `{"children": 8, "mb": 40}`)), &r); err != nil {
			t.Fatal(err)
		}
		if r.Alive*40 >= 128 || r.Killed == 0 {
			t.Errorf("8 children of 40 MiB under memory_mb 128: %d alive, %d killed", r.Alive, r.Killed)
		}
		// The server itself past the limit: killed, recorded, restarted.
		resp := post(t, dev, b, "hog", `{"self_mb": 200}`)
		if resp.StatusCode != http.StatusBadGateway {
			t.Errorf("200 MiB in the server under memory_mb 128: %d, want 502", resp.StatusCode)
		}
		testutil.WaitFor(t, 30*time.Second, func() bool {
			page, err := b.ListInvocations(ctx, "hog", client.InvocationQuery{})
			if err != nil {
				return false
			}
			return slices.ContainsFunc(page.Invocations, func(inv client.Invocation) bool {
				return strings.Contains(inv.Error, "out of memory (128 MiB)")
			})
		})
		testutil.WaitFor(t, 30*time.Second, func() bool {
			return post(t, dev, b, "hog", `{}`).StatusCode == http.StatusOK
		})
	})
}

// hogHandler allocates memory as its event says: in children, or in itself.
const hogHandler = `import os
import time


def _touch(mb):
    b = bytearray(mb << 20)
    b[::4096] = b"\x01" * len(range(0, len(b), 4096))
    return b


def handle(event):
    if event.get("self_mb"):
        keep = _touch(event["self_mb"])
        return len(keep)
    pids = []
    for _ in range(event.get("children", 0)):
        pid = os.fork()
        if pid == 0:
            keep = _touch(event["mb"])
            time.sleep(3)
            os._exit(0)
        pids.append(pid)
    alive = killed = 0
    for pid in pids:
        _, status = os.waitpid(pid, 0)
        if os.WIFSIGNALED(status):
            killed += 1
        else:
            alive += 1
    return {"alive": alive, "killed": killed}
`

func TestBuildsOfOneTenantDoNotHoldBackAnother(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end")
	}
	t.Parallel()
	dev := startDevWith(t)
	dev.waitReady(t)
	a := tenantClient(t, dev, "builder-a")
	b := tenantClient(t, dev, "builder-b")
	// B's builds take 15 s each (a build backend that sleeps).
	slow := map[string]string{"handler.py": "def handle(event):\n    return 1\n", "requirements.txt": "./slowpkg\n"}
	for name, content := range runtimestest.PyPackage("slowpkg", "") {
		slow["slowpkg/"+name] = content
	}
	slow["slowpkg/sleep_seconds"] = "15"
	for _, name := range []string{"slow-1", "slow-2", "slow-3"} {
		create(t, b, client.CreateFunctionRequest{Name: name, Runtime: "python3.11"})
		upload(t, b, name, slow)
	}
	testutil.WaitFor(t, 30*time.Second, func() bool { return building(t, b, "slow-1", "slow-2", "slow-3") > 0 })

	began := time.Now()
	deploy(t, a, client.CreateFunctionRequest{Name: "quick", Runtime: "python3.11"}, map[string]string{"handler.py": "def handle(event):\n    return 1\n"})
	took := time.Since(began)
	if took > 8*time.Second {
		t.Errorf("A's one-second build took %s behind B's builds", took.Round(time.Millisecond))
	}
	if n := building(t, b, "slow-1", "slow-2", "slow-3"); n > 1 {
		t.Errorf("%d of B's builds run at once, want 1 (SLESS_BUILDS_PER_NAMESPACE)", n)
	}
	t.Logf("A's build was Ready %s after its upload, with B's 15 s builds queued", took.Round(time.Millisecond))
}

// building counts the functions whose latest version is building.
func building(t *testing.T, c *client.Client, names ...string) int {
	t.Helper()
	n := 0
	for _, name := range names {
		vs, err := c.ListVersions(context.Background(), name)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range vs.Versions {
			if v.BuildStatus == "Building" {
				n++
			}
		}
	}
	return n
}

// tenantClient returns a client of sub's namespace, ensured.
func tenantClient(t *testing.T, dev *devServer, sub string) *client.Client {
	t.Helper()
	c, err := client.New(dev.base, dev.token(t, sub, false))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.EnsureNamespace(context.Background()); err != nil {
		t.Fatal(err)
	}
	return c
}

func create(t *testing.T, c *client.Client, req client.CreateFunctionRequest) {
	t.Helper()
	if _, err := c.CreateFunction(context.Background(), req); err != nil {
		t.Fatal(err)
	}
}

// upload uploads files as the function's code and returns the new version.
func upload(t *testing.T, c *client.Client, name string, files map[string]string) int {
	t.Helper()
	up, err := c.Upload(context.Background(), name, ziptest.Files(t, files))
	if err != nil {
		t.Fatal(err)
	}
	return up.Version.Version
}

// waitBuilt waits until version v of name is built or failed.
func waitBuilt(t *testing.T, c *client.Client, name string, v int) *client.Version {
	t.Helper()
	var ver *client.Version
	testutil.WaitFor(t, 3*time.Minute, func() bool {
		var err error
		ver, err = c.GetVersion(context.Background(), name, v)
		return err == nil && (ver.BuildStatus == "Succeeded" || ver.BuildStatus == "Failed")
	})
	return ver
}

// deploy creates a function from files and waits until it is Ready.
func deploy(t *testing.T, c *client.Client, req client.CreateFunctionRequest, files map[string]string) {
	t.Helper()
	create(t, c, req)
	v := upload(t, c, req.Name, files)
	if ver := waitBuilt(t, c, req.Name, v); ver.BuildStatus != "Succeeded" {
		t.Fatalf("%s v%d: %s: %s", req.Name, v, ver.BuildStatus, ver.Message)
	}
	testutil.WaitFor(t, time.Minute, func() bool {
		f, err := c.GetFunction(context.Background(), req.Name)
		return err == nil && f.Phase == "Ready"
	})
}

// serve gives a function an http trigger and waits until it is active.
func serve(t *testing.T, c *client.Client, name string) {
	t.Helper()
	ctx := context.Background()
	if _, err := c.CreateTrigger(ctx, client.CreateTriggerRequest{Name: name + "-http", Type: "http", Function: name}); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, time.Minute, func() bool {
		tr, err := c.GetTrigger(ctx, name+"-http")
		return err == nil && tr.Active
	})
}

// post sends body to a function through /fn.
func post(t *testing.T, dev *devServer, c *client.Client, name, body string) *http.Response {
	t.Helper()
	resp, err := http.Post(dev.base+"/fn/"+c.Namespace()+"/"+name, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body = io.NopCloser(strings.NewReader(readAll(t, resp.Body)))
	return resp
}

// call posts body to a function and returns its 200 answer.
func call(t *testing.T, dev *devServer, c *client.Client, name, body string) string {
	t.Helper()
	resp := post(t, dev, c, name, body)
	got := readAll(t, resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: %d %s", name, resp.StatusCode, got)
	}
	return got
}

func readAll(t *testing.T, r io.ReadCloser) string {
	t.Helper()
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// listeningPorts returns every TCP port something on this machine listens on.
func listeningPorts(t *testing.T) []string {
	t.Helper()
	var ports []string
	for _, file := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(file)
		if err != nil {
			continue
		}
		lines := bufio.NewScanner(f)
		for lines.Scan() {
			fields := strings.Fields(lines.Text())
			if len(fields) < 4 || fields[3] != "0A" { // LISTEN
				continue
			}
			_, hexPort, _ := strings.Cut(fields[1], ":")
			if port, err := strconv.ParseUint(hexPort, 16, 16); err == nil {
				ports = append(ports, strconv.FormatUint(port, 10))
			}
		}
		f.Close()
	}
	slices.Sort(ports)
	return slices.Compact(ports)
}

// hostAddresses returns this machine's IPv4 addresses but loopback.
func hostAddresses(t *testing.T) []string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, a := range addrs {
		if ipnet, ok := a.(*net.IPNet); ok && ipnet.IP.To4() != nil && !ipnet.IP.IsLoopback() {
			out = append(out, ipnet.IP.String())
		}
	}
	return out
}

// tenantUID returns the host uid the sandbox gave namespace ns.
func tenantUID(t *testing.T, dev *devServer, ns string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dev.dataDir, "sandbox", "uids.json"))
	if err != nil {
		t.Fatal(err)
	}
	var uids map[string]int
	if err := json.Unmarshal(data, &uids); err != nil || uids[ns] == 0 {
		t.Fatalf("no uid of %s in %s (%v)", ns, data, err)
	}
	return strconv.Itoa(uids[ns])
}

// serveLine listens on 127.0.0.1 and answers every connection with line.
func serveLine(t *testing.T, line string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = io.WriteString(c, line+"\n")
			c.Close()
		}
	}()
	return ln.Addr().String()
}

// index is a PEP 503 package index on 127.0.0.1 serving one wheel.
type index struct {
	url, host string
	mu        sync.Mutex
	requests  map[string]int
}

func startIndex(t *testing.T, wheelName string, wheel []byte) *index {
	t.Helper()
	project, _, _ := strings.Cut(wheelName, "-")
	sum := sha256.Sum256(wheel)
	ix := &index{requests: map[string]int{}}
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		ix.mu.Lock()
		ix.requests[r.URL.Path]++
		ix.mu.Unlock()
		switch r.URL.Path {
		case "/simple/" + project + "/":
			fmt.Fprintf(w, `<html><body><a href="/files/%s#sha256=%s">%s</a></body></html>`, wheelName, hex.EncodeToString(sum[:]), wheelName)
		case "/files/" + wheelName:
			_, _ = w.Write(wheel)
		default:
			http.NotFound(w, r)
		}
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: mux}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { srv.Close() })
	ix.host = ln.Addr().String()
	ix.url = "http://" + ix.host
	return ix
}

func (ix *index) port() string {
	_, port, _ := net.SplitHostPort(ix.host)
	return port
}

func (ix *index) hits(path string) int {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	return ix.requests[path]
}

func (ix *index) all() map[string]int {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	return maps.Clone(ix.requests)
}

// tamper overwrites the stored zip of a function with zip, through the
// embedded S3 server with its keys, as a tenant that stole them would.
func tamper(t *testing.T, dev *devServer, access, secret, ns, fn string, zip []byte) {
	t.Helper()
	_, rest, ok := strings.Cut(dev.stderr.String(), "serving an embedded S3 server\" endpoint=http://")
	if !ok {
		t.Fatal("sless dev did not say where its S3 server is")
	}
	endpoint, _, _ := strings.Cut(rest, " ")
	s3, err := minio.New(endpoint, &minio.Options{Creds: credentials.NewStaticV4(access, secret, "")})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	tampered := 0
	for obj := range s3.ListObjects(ctx, "sless-code", minio.ListObjectsOptions{Prefix: "code/" + ns + "/" + fn + "/", Recursive: true}) {
		if obj.Err != nil {
			t.Fatal(obj.Err)
		}
		if strings.HasSuffix(obj.Key, "/source.zip") {
			if _, err := s3.PutObject(ctx, "sless-code", obj.Key, bytes.NewReader(zip), int64(len(zip)), minio.PutObjectOptions{}); err != nil {
				t.Fatal(err)
			}
			tampered++
		}
	}
	if tampered == 0 {
		t.Fatalf("no stored zip of %s/%s", ns, fn)
	}
}
