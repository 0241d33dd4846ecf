package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/wait"

	"github.com/slessio/sless/httpapi/auth"
	"github.com/slessio/sless/internal/testutil"
	"github.com/slessio/sless/k8sdriver/testcluster"
	"github.com/slessio/sless/localdriver"
	"github.com/slessio/sless/localdriver/sandbox/sandboxtest"
	"github.com/slessio/sless/store/codestore/s3embed"
	"github.com/slessio/sless/store/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(testcluster.Wrap(m)) }

// repoRoot is the main module's directory, from this package's.
const repoRoot = "../../.."

const (
	s3Access = "e2e-access"
	s3Secret = "e2e-secret-0123456789"
	jwt      = "e2e-jwt-secret-0123456789abcdef!"
)

// platform is a `sless serve` subprocess and what it runs on.
type platform struct {
	t       *testing.T
	bin     string
	env     []string
	listen  string
	dataDir string
	cmd     *exec.Cmd
	exited  chan struct{}
	log     *bytes.Buffer
}

// TestEndToEnd drives sless only through the CLI binary and plain HTTP.
func TestEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end")
	}
	bin := buildSless(t)
	s3 := objectStorage(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	listen := ln.Addr().String()
	ln.Close()
	p := &platform{t: t, bin: bin, listen: listen, dataDir: filepath.Join(t.TempDir(), "data"), log: &bytes.Buffer{},
		env: append(os.Environ(), "DATABASE_URL="+pgtest.NewDBURL(t), "S3_ENDPOINT="+s3, "S3_ACCESS_KEY="+s3Access,
			"S3_SECRET_KEY="+s3Secret, "SLESS_JWT_SECRET="+jwt, "SLESS_LISTEN="+listen)}
	p.start()
	t.Cleanup(func() {
		p.stop()
		if t.Failed() {
			t.Logf("sless serve output:\n%s", p.log.String())
		}
	})
	base := "http://" + listen
	token, err := auth.Mint([]byte(jwt), "e2e-user", time.Hour, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := t.TempDir()
	sless := func(args ...string) (string, string, error) { return runCLI(bin, cfg, args...) }
	must := func(out, errOut string, err error) string {
		t.Helper()
		if err != nil {
			t.Fatalf("%v\nstdout: %s\nstderr: %s", err, out, errOut)
		}
		return out
	}
	must(sless("login", "--url", base, "--token", token))

	// A Python function from a directory, served over HTTP.
	work := t.TempDir()
	hello := filepath.Join(work, "hello")
	must(sless("fn", "init", hello, "--runtime", "python3.11"))
	write(t, hello, "handler.py", echoV1)
	out := must(sless("fn", "deploy", hello))
	if !strings.Contains(out, "version 1 is Ready") {
		t.Fatalf("deploy: %s", out)
	}
	// A cron trigger every minute, checked at the end (the test takes longer).
	cronSince := time.Now()
	must(sless("trigger", "create", "hello-tick", "--function", "hello", "--type", "cron", "--schedule", "* * * * *"))

	url := base + "/fn/" + auth.Namespace("e2e-user") + "/hello"
	var echo struct {
		Method, Path, Body, Name string
	}
	if out := must(sless("fn", "invoke", "hello", "--data", `{"name":"json"}`)); json.Unmarshal([]byte(out), &echo) != nil || echo.Name != "json" || echo.Method != "POST" {
		t.Fatalf("JSON invoke: %s", out)
	}
	answer := func(method, path, contentType, body string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest(method, url+path, strings.NewReader(body))
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		c := &http.Client{Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	if resp, body := answer("POST", "/text", "text/plain", "plain words"); resp.StatusCode != 200 || json.Unmarshal([]byte(body), &echo) != nil || echo.Body != "plain words" || echo.Path != "/text" {
		t.Fatalf("text POST = %d %s", resp.StatusCode, body)
	}
	if resp, body := answer("POST", "/form", "application/x-www-form-urlencoded", "a=1&b=two"); resp.StatusCode != 200 || json.Unmarshal([]byte(body), &echo) != nil || echo.Body != "a=1&b=two" {
		t.Fatalf("form POST = %d %s", resp.StatusCode, body)
	}
	binary := make([]byte, 1<<20) // 1 MiB that is not UTF-8
	if _, err := rand.Read(binary); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(binary)
	var got struct {
		Size   int
		SHA256 string
	}
	if resp, body := answer("POST", "/sha256", "application/octet-stream", string(binary)); resp.StatusCode != 200 ||
		json.Unmarshal([]byte(body), &got) != nil || got.Size != len(binary) || got.SHA256 != hex.EncodeToString(sum[:]) {
		t.Fatalf("1 MiB binary POST = %d %.200s; want size %d and sha256 %x", resp.StatusCode, body, len(binary), sum)
	}
	if resp, _ := answer("GET", "/redirect", "", ""); resp.StatusCode != 302 || resp.Header.Get("Location") != "/elsewhere" {
		t.Fatalf("redirect = %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	testutil.WaitFor(t, 30*time.Second, func() bool {
		out, _, err := sless("fn", "logs", "hello")
		return err == nil && strings.Contains(out, "http POST /form") && strings.Contains(out, "| echo /form")
	})

	// Version 2, then a rollback to version 1.
	write(t, hello, "handler.py", "def handle(event):\n    return {'version': 2}\n")
	must(sless("fn", "deploy", hello))
	if out := must(sless("fn", "invoke", "hello")); strings.TrimSpace(out) != `{"version":2}` {
		t.Fatalf("version 2: %s", out)
	}
	must(sless("fn", "rollback", "hello", "--to", "1"))
	testutil.WaitFor(t, 30*time.Second, func() bool {
		out, _, err := sless("fn", "invoke", "hello", "--via-http", "--path", "/again")
		return err == nil && strings.Contains(out, "/again")
	})

	// Node.js and Go, from their scaffolds.
	for _, rt := range []string{"nodejs20", "go1.23"} {
		name := "hi-" + strings.TrimRight(strings.ReplaceAll(rt, ".", ""), "0123456789")
		dir := filepath.Join(work, name)
		must(sless("fn", "init", dir, "--runtime", rt))
		must(sless("fn", "deploy", dir))
		if out := must(sless("fn", "invoke", name, "--data", `{"name":"e2e"}`)); strings.TrimSpace(out) != `{"hello":"e2e"}` {
			t.Fatalf("%s: %s", rt, out)
		}
	}

	// Disable and enable.
	must(sless("trigger", "disable", "hello-http"))
	testutil.WaitFor(t, 30*time.Second, func() bool { resp, _ := answer("GET", "/", "", ""); return resp.StatusCode == 503 })
	must(sless("trigger", "enable", "hello-http"))
	testutil.WaitFor(t, 30*time.Second, func() bool { resp, _ := answer("GET", "/", "", ""); return resp.StatusCode == 200 })

	// Jobs: a result, and a failure whose traceback is its message.
	if out := must(sless("job", "run", "hello", "--name", "once", "--event", `{"name":"job"}`, "--wait")); !strings.Contains(out, `"name": "job"`) {
		t.Fatalf("job result: %s", out)
	}
	if _, _, err := sless("job", "run", "hello", "--name", "boom", "--event", `{"fail": true}`, "--wait"); exitCode(err) != 1 {
		t.Fatalf("a failing job exited %v", err)
	}
	if out := must(sless("job", "get", "boom")); !strings.Contains(out, "Failed") || !strings.Contains(out, "ValueError") {
		t.Fatalf("failed job: %s", out)
	}

	// Bad input from the CLI: a clear message, exit status 1, nothing left.
	plain := filepath.Join(work, "plain") // no sless.yaml: the runtime must be given
	write(t, plain, "handler.py", "def handle(event):\n    return 1\n")
	huge := filepath.Join(work, "huge")
	write(t, huge, "handler.py", "def handle(event):\n    return 1\n")
	noise := make([]byte, 33<<20)
	if _, err := rand.Read(noise); err != nil {
		t.Fatal(err)
	}
	write(t, huge, "noise.bin", string(noise))
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"fn", "deploy", filepath.Join(work, "missing"), "--runtime", "python3.11"}, "no such directory"},
		{[]string{"fn", "deploy", hello, "--name", "bad", "--runtime", "cobol85"}, "runtime"},
		{[]string{"fn", "deploy", huge, "--runtime", "python3.11"}, "over the API's limit"},
		{[]string{"fn", "deploy", plain, "--name", "bad"}, "say its --runtime"},
		{[]string{"fn", "deploy", hello, "--name", "bad", "--runtime", "python3.11", "--cron", "every day"}, "--cron"},
	} {
		_, errOut, err := sless(c.args...)
		if exitCode(err) != 1 || !strings.Contains(errOut, c.want) {
			t.Errorf("sless %s: exit %v, stderr %q; want 1 and %q", strings.Join(c.args, " "), err, errOut, c.want)
		}
	}
	if out := must(sless("fn", "ls", "-o", "json")); strings.Contains(out, `"bad"`) || strings.Contains(out, `"huge"`) {
		t.Fatalf("a refused deploy left a function: %s", out)
	}

	// Restart the control plane: every acknowledged event is still there,
	// and the functions serve again.
	var before []struct{ Position int64 }
	if err := json.Unmarshal([]byte(must(sless("events", "--limit", "1000", "-o", "json"))), &before); err != nil || len(before) == 0 {
		t.Fatalf("events before the restart: %v", err)
	}
	p.stop()
	p.start()
	var after []struct{ Position int64 }
	if err := json.Unmarshal([]byte(must(sless("events", "--limit", "1000", "-o", "json"))), &after); err != nil {
		t.Fatal(err)
	}
	positions := map[int64]bool{}
	for _, e := range after {
		positions[e.Position] = true
	}
	for _, e := range before {
		if !positions[e.Position] {
			t.Fatalf("event %d acknowledged before the restart is gone", e.Position)
		}
	}
	testutil.WaitFor(t, 60*time.Second, func() bool { resp, _ := answer("GET", "/", "", ""); return resp.StatusCode == 200 })

	// The cron trigger fired on its own.
	testutil.WaitFor(t, time.Until(cronSince.Add(150*time.Second)), func() bool {
		out, _, err := sless("fn", "logs", "hello")
		return err == nil && strings.Contains(out, "  cron")
	})

	// Delete everything: nothing listed, no function process left.
	for _, j := range []string{"once", "boom"} {
		must(sless("job", "rm", j))
	}
	for _, fn := range []string{"hello", "hi-nodejs", "hi-go"} {
		must(sless("fn", "rm", fn))
	}
	if out := must(sless("fn", "ls", "-o", "json")); strings.TrimSpace(out) != "[]" {
		t.Fatalf("functions left: %s", out)
	}
	if out := must(sless("trigger", "ls", "-o", "json")); strings.TrimSpace(out) != "[]" {
		t.Fatalf("triggers left: %s", out)
	}
	testutil.WaitFor(t, 60*time.Second, func() bool { return len(p.functionProcesses()) == 0 })
}

// echoV1 answers with what it got, and fails or redirects when asked.
const echoV1 = `import base64
import hashlib


def handle(event):
    if event.get("fail"):
        raise ValueError("asked to fail")
    path = event.get("_path", "")
    print("echo", path)
    if path == "/redirect":
        return {"statusCode": 302, "headers": {"Location": "/elsewhere"}, "body": ""}
    if path == "/sha256":
        body = event.get("body", "")
        data = base64.b64decode(body) if event.get("_body_base64") else body.encode()
        return {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    return {"method": event.get("_method"), "path": path, "body": event.get("body"), "name": event.get("name")}
`

// runCLI runs the sless binary with its login kept in cfg (and none from
// the environment) and returns its output.
func runCLI(bin, cfg string, args ...string) (stdout, stderr string, err error) {
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+cfg, "SLESS_URL=", "SLESS_TOKEN=")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}

// start runs `sless serve` and waits until it is ready.
func (p *platform) start() {
	p.t.Helper()
	p.cmd = exec.Command(p.bin, "serve", "--data-dir", p.dataDir)
	p.cmd.Env = p.env
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	if err := p.cmd.Start(); err != nil {
		p.t.Fatal(err)
	}
	p.exited = make(chan struct{})
	go func(cmd *exec.Cmd, exited chan struct{}) { _ = cmd.Wait(); close(exited) }(p.cmd, p.exited)
	testutil.WaitFor(p.t, 90*time.Second, func() bool {
		select {
		case <-p.exited:
			p.t.Fatalf("sless serve exited:\n%s", p.log.String())
		default:
		}
		resp, err := http.Get("http://" + p.listen + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
}

// stop sends SIGTERM and waits for the process to end.
func (p *platform) stop() {
	if p.cmd == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(60 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
		p.t.Errorf("sless serve did not stop within 60 s of SIGTERM")
	}
	p.cmd = nil
}

// functionProcesses are the sandboxed processes below the data dir, the
// server's own and the idle warm pool's excepted.
func (p *platform) functionProcesses() []int {
	var pids []int
	for _, pid := range sandboxtest.PIDsBut(p.dataDir, localdriver.ServesNoFunction) {
		if p.cmd == nil || pid != p.cmd.Process.Pid {
			pids = append(pids, pid)
		}
	}
	return pids
}

// buildSless builds cmd/sless into a temporary directory.
func buildSless(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "sless")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/sless")
	cmd.Dir = repoRoot
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/sless: %v\n%s", err, out)
	}
	return bin
}

// objectStorage returns the host:port of a MinIO container when a Docker
// engine answers, else of the embedded S3 server.
func objectStorage(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	if err := pgtest.DockerAnswers(ctx); err == nil {
		ctr, err := testcontainers.Run(ctx, "minio/minio:latest",
			testcontainers.WithEnv(map[string]string{"MINIO_ROOT_USER": s3Access, "MINIO_ROOT_PASSWORD": s3Secret}),
			testcontainers.WithCmd("server", "/data"),
			testcontainers.WithExposedPorts("9000/tcp"),
			testcontainers.WithWaitStrategy(wait.ForHTTP("/minio/health/ready").WithPort("9000/tcp")),
		)
		if err == nil {
			t.Cleanup(func() { _ = ctr.Terminate(context.Background()) })
			endpoint, err := ctr.PortEndpoint(ctx, "9000/tcp", "")
			if err == nil {
				t.Logf("object storage: a MinIO container at %s", endpoint)
				return endpoint
			}
		}
		t.Logf("no MinIO container (%v): the embedded S3 server instead", err)
	} else {
		t.Logf("no Docker engine (%v): object storage is the embedded S3 server", err)
	}
	srv, err := s3embed.Start(ctx, s3embed.Options{Dir: t.TempDir(), AccessKey: s3Access, SecretKey: s3Secret, AutoCreateBuckets: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return srv.Endpoint()
}

// write writes a file below dir.
func write(t *testing.T, dir, name, data string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// exitCode is the exit status of a finished command's error (0 for nil).
func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}
