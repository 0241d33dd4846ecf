package localdriver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/driver"
	"github.com/slessio/sless/internal/testutil"
	"github.com/slessio/sless/localdriver"
	"github.com/slessio/sless/localdriver/sandbox"
)

// pySecrets answers with its secret variable TOKEN and its secret file
// /run/secrets/cert ("" when it has none); /crash exits the process.
var pySecrets = map[string]string{"handler.py": `import os
import random

INSTANCE = random.SystemRandom().getrandbits(48)


def handle(event):
    if event.get("_path", "/").strip("/") == "crash":
        os._exit(3)
    cert = ""
    if os.path.exists("/run/secrets/cert"):
        with open("/run/secrets/cert") as f:
            cert = f.read()
    return {"instance": INSTANCE, "token": os.environ.get("TOKEN", ""), "cert": cert}
`}

type secretsAnswer struct {
	Instance int64  `json:"instance"`
	Token    string `json:"token"`
	Cert     string `json:"cert"`
}

// secretsConfig uses secret "tok" as TOKEN and, with file, secret "cert"
// as a file, both at version 1.
func secretsConfig(file bool) domain.FunctionConfig {
	cfg := pyConfig(nil)
	cfg.Secrets = map[string]string{"TOKEN": "tok"}
	cfg.SecretVersions = map[string]int{"tok": 1}
	if file {
		cfg.SecretFiles = []string{"cert"}
		cfg.SecretVersions["cert"] = 1
	}
	return cfg
}

// testVault is an in-memory stand-in for the platform's vault (package
// secrets): the subject here is the driver. It counts the opens.
type testVault struct {
	mu     sync.Mutex
	values map[string]string // name → value of version 1
	opens  int
}

func newTestVault(values map[string]string) *testVault { return &testVault{values: values} }

func (v *testVault) OpenSecret(_ context.Context, _, name string, version int) ([]byte, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.opens++
	value, ok := v.values[name]
	if !ok || version != 1 {
		return nil, domain.Errorf(domain.ENOTFOUND, "version %d of secret %q not found", version, name)
	}
	return []byte(value), nil
}

func (v *testVault) delete(name string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	delete(v.values, name)
}

func (v *testVault) openCount() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.opens
}

// TestSecretsLeaveNoTrace: a function's secrets reach its instance (and
// every restart of it, opened anew) and its runs, and nothing else: no
// file under the data dir, no process's command line (bwrap's included),
// no line of the driver's log holds a value. Once a secret version is
// deleted, a crash is not restarted with the old value: the instance
// crash-loops naming the secret, and a run is EUNPROCESSABLE naming it.
func TestSecretsLeaveNoTrace(t *testing.T) {
	t.Parallel()
	logs := &testutil.SyncBuffer{}
	d, dir, failures := newDriver(t, localdriver.Options{Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	e := env{d: d, dir: dir, store: newCodeStore(t)}
	token, cert := "tok-"+randomHex(t), "-----BEGIN CERT-----\n"+randomHex(t)+"\n"
	values := [][]byte{[]byte(token), []byte(cert)}
	vault := newTestVault(map[string]string{"tok": token, "cert": cert})
	d.UseSecrets(vault)
	w := e.mustBuild(t, ns, "secrets", 1, secretsConfig(true), pySecrets)
	ep := e.mustDeploy(t, w)
	var a secretsAnswer
	getJSON(t, ep, "", &a)
	if a.Token != token || a.Cert != cert {
		t.Fatalf("the instance got token %q and cert %q, want the secrets' values", a.Token, a.Cert)
	}

	bwrap := e.d.InstancePID(ep)
	if cmdline, err := os.ReadFile("/proc/" + itoa(bwrap) + "/cmdline"); err != nil || len(cmdline) == 0 {
		t.Fatalf("the command line of the instance's process %d: %q, %v", bwrap, cmdline, err)
	}
	noValueIn := func(when string) {
		t.Helper()
		for _, where := range valueHolders(t, dir, values) {
			t.Errorf("%s: %s holds a secret's value", when, where)
		}
		if logged := logs.String(); strings.Contains(logged, token) || strings.Contains(logged, cert[21:]) {
			t.Errorf("%s: the driver's log holds a secret's value:\n%s", when, logged)
		}
	}
	noValueIn("with the instance running")

	opens := vault.openCount()
	if err := getJSONErr(ep, "/crash", nil); err == nil {
		t.Fatal("a request that exits the process was answered")
	}
	var b secretsAnswer
	testutil.WaitFor(t, 30*time.Second, func() bool { return getJSONErr(ep, "/", &b) == nil && b.Instance != a.Instance })
	if b.Token != token || b.Cert != cert || vault.openCount() != opens+2 {
		t.Fatalf("after a crash the instance got token %q and cert %q after %d opens, want the values, opened anew (2)", b.Token, b.Cert, vault.openCount()-opens)
	}
	res := e.run(t, w, "{}")
	if res.ExitCode != 0 || !strings.Contains(res.Stdout, token) {
		t.Fatalf("run: exit %d, stdout %q, stderr %q", res.ExitCode, res.Stdout, res.Stderr)
	}
	noValueIn("after a restart and a run")

	vault.delete("cert")
	_, err := e.d.Run(context.Background(), driver.RunSpec{Workload: w, Name: "job", RunID: 2, Event: []byte("{}")})
	if domain.ErrorCode(err) != domain.EUNPROCESSABLE || !strings.Contains(domain.ErrorMessage(err), `"cert"`) {
		t.Fatalf("a run after its secret version was deleted: %v, want EUNPROCESSABLE naming cert", err)
	}
	if err := getJSONErr(ep, "/crash", nil); err == nil {
		t.Fatal("a request that exits the process was answered")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := failures.Wait(ctx, ns, "secrets"); err != nil {
		t.Fatalf("restarts without the secret did not end in a crash loop: %v", err)
	}
	_, err = e.d.Deploy(context.Background(), driver.Deployment{Workload: w, Replicas: 1})
	if domain.ErrorCode(err) != domain.EUNPROCESSABLE || !strings.Contains(domain.ErrorMessage(err), `"cert"`) {
		t.Fatalf("Deploy after the crash loop: %v, want EUNPROCESSABLE naming cert", err)
	}
	noValueIn("at the end")
}

// valueHolders returns the regular files under dir and the command lines
// of this machine's processes that hold one of values.
func valueHolders(t *testing.T, dir string, values [][]byte) []string {
	t.Helper()
	holds := func(data []byte) bool {
		return slices.ContainsFunc(values, func(v []byte) bool { return bytes.Contains(data, v) })
	}
	var found []string
	err := filepath.WalkDir(dir, func(path string, e fs.DirEntry, err error) error {
		if err != nil || !e.Type().IsRegular() {
			return nil // gone meanwhile (a stopped process's folder)
		}
		if data, err := os.ReadFile(path); err == nil && holds(data) {
			found = append(found, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		if cmdline, err := os.ReadFile("/proc/" + p.Name() + "/cmdline"); err == nil && holds(cmdline) {
			found = append(found, "the command line of process "+p.Name()+": "+strings.ReplaceAll(string(cmdline), "\x00", " "))
		}
	}
	return found
}

// TestWarmPoolTakesSecretVariablesNotFiles: a pooled process takes a
// function's secret variables with the rest of its environment; a
// version with secret files starts a process of its own (its files are
// mounted when its sandbox is made), and gets them.
func TestWarmPoolTakesSecretVariablesNotFiles(t *testing.T) {
	t.Parallel()
	e := poolSetup(t, 1)
	token, cert := "tok-"+randomHex(t), "cert-"+randomHex(t)
	e.d.UseSecrets(newTestVault(map[string]string{"tok": token, "cert": cert}))
	for _, c := range []struct {
		name   string
		file   bool
		pooled bool
	}{{"variables", false, true}, {"files", true, false}} {
		w := e.mustBuild(t, ns, "pool-"+c.name, 1, secretsConfig(c.file), pySecrets)
		waitPool(t, e.d)
		pool, _ := e.d.PoolPIDs("python3.11")
		ep := e.mustDeploy(t, w)
		if got := slices.Contains(pool, e.d.InstancePID(ep)); got != c.pooled {
			t.Errorf("%s: pooled = %v, want %v", c.name, got, c.pooled)
		}
		var a secretsAnswer
		getJSON(t, ep, "", &a)
		if want := map[bool]string{true: cert}[c.file]; a.Token != token || a.Cert != want {
			t.Errorf("%s: token %q, cert %q; want %q, %q", c.name, a.Token, a.Cert, token, want)
		}
	}
}

// TestSecretFilesNeedTheSandbox: without a sandbox secret variables are
// delivered, but secret files, which would have no file system of the
// function's own to be on, make the version fail to start, saying why.
func TestSecretFilesNeedTheSandbox(t *testing.T) {
	t.Parallel()
	sb, err := sandbox.New(sandbox.Options{Dir: t.TempDir(), Insecure: true})
	if err != nil {
		t.Fatal(err)
	}
	e := setup(t, localdriver.Options{Sandbox: sb})
	token := "tok-" + randomHex(t)
	e.d.UseSecrets(newTestVault(map[string]string{"tok": token, "cert": "x"}))
	w := e.mustBuild(t, ns, "plain", 1, secretsConfig(false), pySecrets)
	var a secretsAnswer
	getJSON(t, e.mustDeploy(t, w), "", &a)
	if a.Token != token {
		t.Fatalf("token %q, want the secret's value", a.Token)
	}
	w = e.mustBuild(t, ns, "files", 1, secretsConfig(true), pySecrets)
	_, err = e.d.Deploy(context.Background(), driver.Deployment{Workload: w, Replicas: 1})
	if domain.ErrorCode(err) != domain.EUNPROCESSABLE || !strings.Contains(domain.ErrorMessage(err), "need the sandbox") {
		t.Fatalf("Deploy of secret files without a sandbox: %v, want EUNPROCESSABLE saying they need the sandbox", err)
	}
}

// getJSONErr GETs path of the function at endpoint on a fresh connection
// and decodes its JSON answer into v (nil: none wanted).
func getJSONErr(endpoint, path string, v any) error {
	resp, err := fresh.Get(testutil.EndpointURL(endpoint) + path)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	if v == nil {
		return nil
	}
	return json.NewDecoder(resp.Body).Decode(v)
}
