package localdriver_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/driver"
	"github.com/slessio/sless/internal/testutil"
	"github.com/slessio/sless/localdriver"
	"github.com/slessio/sless/store/codestore"
	"github.com/slessio/sless/store/codestore/ziptest"
)

// fileCode is a CodeFetcher over a directory: object keys are file names.
// The helper process of TestDriverDeathKillsFunctions reads code with it.
type fileCode string

func (f fileCode) Get(_ context.Context, key string) (io.ReadCloser, error) {
	return os.Open(string(f) + "/" + key)
}

// discard is the logger of tests that need no output.
var discard = slog.New(slog.NewTextHandler(io.Discard, nil))

// env is a test's driver and code store.
type env struct {
	d     *localdriver.Driver
	dir   string
	store *codestore.Store
}

func setup(t *testing.T, opts localdriver.Options) env {
	t.Helper()
	d, dir, _ := newDriver(t, opts)
	return env{d: d, dir: dir, store: newCodeStore(t)}
}

// put stores a zip (as is, valid or not) for a function and returns its key.
func (e env) put(t testing.TB, ns, fn string, zipData []byte) codestore.Object {
	t.Helper()
	files, err := codestore.ValidateZip(zipData, codestore.Limits{})
	if err != nil {
		// A hostile zip: store it under the name of harmless files, as a
		// tampered store would hand it out.
		files = []codestore.File{{Name: "handler.py", Mode: 0o644, Data: []byte("x")}}
	}
	obj, err := e.store.Put(context.Background(), ns, fn, 1, zipData, files, "sless/test")
	if err != nil {
		t.Fatal(err)
	}
	return obj
}

// build stores files and builds them as version of ns/fn.
func (e env) build(t testing.TB, ns, fn string, version int, cfg domain.FunctionConfig, files map[string]string) (driver.Workload, driver.BuildResult) {
	t.Helper()
	obj := e.put(t, ns, fn, ziptest.Files(t, files))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, err := e.d.Build(ctx, driver.BuildSpec{Namespace: ns, Function: fn, Version: version, Digest: obj.Digest,
		ZipKey: obj.ZipKey, ContextKey: obj.ContextKey, Config: cfg, Code: e.store})
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	return driver.Workload{Namespace: ns, Function: fn, Version: version, Image: res.Image, Config: cfg}, res
}

func (e env) mustBuild(t testing.TB, ns, fn string, version int, cfg domain.FunctionConfig, files map[string]string) driver.Workload {
	t.Helper()
	w, res := e.build(t, ns, fn, version, cfg, files)
	if res.Failed {
		t.Fatalf("build failed: %s\n%s", res.Message, res.Log)
	}
	return w
}

func (e env) mustDeploy(t *testing.T, w driver.Workload) string {
	t.Helper()
	ep, err := e.d.Deploy(context.Background(), driver.Deployment{Workload: w, Replicas: 1})
	if err != nil {
		t.Fatalf("Deploy: %v", err)
	}
	return ep
}

func (e env) run(t *testing.T, w driver.Workload, event string) driver.RunResult {
	t.Helper()
	res, err := e.d.Run(context.Background(), driver.RunSpec{Workload: w, Name: "job", RunID: 1, Event: json.RawMessage(event)})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return res
}

func pyConfig(env map[string]string) domain.FunctionConfig {
	return domain.FunctionConfig{Runtime: domain.RuntimePython311, Entrypoint: "handler.handle", MemoryMB: 128, TimeoutSec: 30, EnvVars: env}
}

// pyHello answers with GREETING and a random number its process drew when
// it loaded (in a sandbox every function has the same pid).
var pyHello = map[string]string{"handler.py": `import os
import random

INSTANCE = random.SystemRandom().getrandbits(48)


def handle(event):
    return {"instance": INSTANCE, "greeting": os.environ.get("GREETING", "")}
`}

type hello struct {
	Instance int64  `json:"instance"`
	Greeting string `json:"greeting"`
}

var fresh = testutil.EndpointClient(10*time.Second, false)

func getHello(endpoint string) (hello, error) {
	var h hello
	resp, err := fresh.Get(testutil.EndpointURL(endpoint) + "/")
	if err != nil {
		return h, err
	}
	defer resp.Body.Close()
	return h, json.NewDecoder(resp.Body).Decode(&h)
}

func mustHello(t *testing.T, endpoint string) hello {
	t.Helper()
	h, err := getHello(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	return h
}
