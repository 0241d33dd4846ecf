package drivertest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/driver"
	"github.com/slessio/sless/internal/testutil"
	"github.com/slessio/sless/runtimes"
	"github.com/slessio/sless/store/codestore"
	"github.com/slessio/sless/store/codestore/ziptest"
)

// fn is one function of a case, in a namespace of its own. Its cleanup
// removes it and checks that nothing of it is left.
type fn struct {
	t        *testing.T
	h        Harness
	ns, name string
	specs    []driver.BuildSpec // by version - 1
}

func newFn(t *testing.T, h Harness, name string) *fn {
	t.Helper()
	x := &fn{t: t, h: h, ns: randomNamespace(t), name: name}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), h.DeployTimeout)
		defer cancel()
		if err := h.Driver.Remove(ctx, x.ns, x.name); err != nil {
			t.Errorf("cleanup: Remove %s/%s: %v", x.ns, x.name, err)
			return
		}
		left, err := h.Leftovers(ctx, x.ns, x.name)
		if err != nil {
			t.Errorf("cleanup: Leftovers: %v", err)
		} else if len(left) > 0 {
			t.Errorf("cleanup: left behind after Remove: %v", left)
		}
	})
	return x
}

// randomNamespace returns a namespace shaped like the real ones.
func randomNamespace(t *testing.T) string { return "sless-" + randomHex(t) }

// randomHex returns 16 random hex digits.
func randomHex(t *testing.T) string {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// config is a function configuration for a sample.
func config(s sample, env map[string]string, timeoutSec int) domain.FunctionConfig {
	if timeoutSec == 0 {
		timeoutSec = domain.DefaultTimeoutSec
	}
	return domain.FunctionConfig{Runtime: s.runtime, Entrypoint: s.entrypoint,
		MemoryMB: domain.DefaultMemoryMB, TimeoutSec: timeoutSec, EnvVars: env}
}

// build uploads s as the function's next version, as the API does, and builds it.
func (x *fn) build(s sample, cfg domain.FunctionConfig) (driver.Workload, driver.BuildResult) {
	x.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), x.h.BuildTimeout)
	defer cancel()
	zipData := ziptest.Files(x.t, s.files)
	files, err := codestore.ValidateZip(zipData, codestore.Limits{})
	if err != nil {
		x.t.Fatalf("sample zip: %v", err)
	}
	before, after := runtimes.Describe(s.runtime).ImageSteps(codestore.Lookup(files))
	obj, err := x.h.Code.Put(ctx, x.ns, x.name, 1, zipData, files, x.h.BaseImage(s.runtime),
		codestore.ImageSteps{BeforeCode: before, AfterCode: after})
	if err != nil {
		x.t.Fatalf("store sample code: %v", err)
	}
	spec := driver.BuildSpec{Namespace: x.ns, Function: x.name, Version: len(x.specs) + 1, Digest: obj.Digest,
		ZipKey: obj.ZipKey, ContextKey: obj.ContextKey, Config: cfg, Code: x.h.Code}
	x.specs = append(x.specs, spec)
	res := x.rebuild(spec.Version)
	w := driver.Workload{Namespace: x.ns, Function: x.name, Version: spec.Version, Image: res.Image, Config: cfg}
	return w, res
}

// rebuild builds an uploaded version (again).
func (x *fn) rebuild(version int) driver.BuildResult {
	x.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), x.h.BuildTimeout)
	defer cancel()
	spec := x.specs[version-1]
	started := time.Now()
	res, err := x.h.Driver.Build(ctx, spec)
	if err != nil {
		x.t.Fatalf("Build %s v%d: %v", x.name, version, err)
	}
	x.t.Logf("built %s v%d (%s) in %s", x.name, version, spec.Config.Runtime, time.Since(started).Round(time.Millisecond))
	return res
}

// mustBuild is build for a sample that must build.
func (x *fn) mustBuild(s sample, cfg domain.FunctionConfig) driver.Workload {
	x.t.Helper()
	w, res := x.build(s, cfg)
	if res.Failed || res.Image == "" {
		x.t.Fatalf("Build %s v%d: failed=%v image=%q message=%s\nlog:\n%s", x.name, w.Version, res.Failed, res.Image, res.Message, res.Log)
	}
	return w
}

func (x *fn) deploy(w driver.Workload, replicas int) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), x.h.DeployTimeout)
	defer cancel()
	return x.h.Driver.Deploy(ctx, driver.Deployment{Workload: w, Replicas: replicas})
}

// mustScale scales w to replicas instances, retiring those named first, and
// returns the endpoints Scale gives.
func (x *fn) mustScale(w driver.Workload, replicas int, retire []string) []string {
	x.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), x.h.DeployTimeout)
	defer cancel()
	eps, err := x.h.Driver.Scale(ctx, driver.Deployment{Workload: w, Replicas: replicas, Retire: retire})
	if err != nil {
		x.t.Fatalf("Scale %s v%d to %d: %v", x.name, w.Version, replicas, err)
	}
	return eps
}

// mustDeploy deploys one replica of w and returns the URL of its endpoint.
func (x *fn) mustDeploy(w driver.Workload) string {
	x.t.Helper()
	endpoint, err := x.deploy(w, 1)
	if err != nil {
		x.t.Fatalf("Deploy %s v%d: %v", x.name, w.Version, err)
	}
	if endpoint == "" {
		x.t.Fatalf("Deploy %s v%d returned no endpoint", x.name, w.Version)
	}
	return endpoint
}

// run runs w once as a job with event.
func (x *fn) run(w driver.Workload, event string) driver.RunResult {
	x.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), x.h.DeployTimeout)
	defer cancel()
	res, err := x.h.Driver.Run(ctx, runSpec(w, event))
	if err != nil {
		x.t.Fatalf("Run %s v%d: %v", x.name, w.Version, err)
	}
	return res
}

func runSpec(w driver.Workload, event string) driver.RunSpec {
	return driver.RunSpec{Workload: w, Name: "job-" + w.Function, RunID: 1, Event: json.RawMessage(event)}
}

// answer is what the samples return.
type answer struct {
	Runtime  string `json:"runtime"`
	Version  string `json:"version"`
	Instance int64  `json:"instance"` // the answering process (see the samples)
	Greeting string `json:"greeting"`
	N        any    `json:"n"`
}

// client talks to function endpoints with keep-alive, as the proxy does.
var client = testutil.EndpointClient(30*time.Second, true)

// get requests url and decodes a 200 JSON answer into v.
func get(ctx context.Context, c *http.Client, url string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s: %s", url, resp.Status, strings.TrimSpace(string(body)))
	}
	if v == nil {
		return nil
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("GET %s: %v in %q", url, err, body)
	}
	return nil
}

// request asks the function served at endpoint for path with a real GET on
// c and decodes its 200 JSON answer into v.
func (h Harness) request(ctx context.Context, c *http.Client, endpoint, path string, v any) error {
	return get(ctx, c, h.URL(endpoint)+path, v)
}

// mustGet asks the function at endpoint for path; the request must succeed.
func (x *fn) mustGet(endpoint, path string) answer {
	x.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var a answer
	if err := x.h.request(ctx, client, endpoint, path, &a); err != nil {
		x.t.Fatal(err)
	}
	return a
}

// fresh talks to function endpoints on a new connection per request, so
// that a request sees whether something listens now.
var fresh = testutil.EndpointClient(5*time.Second, false)

// waitGone asks endpoint for path on fresh connections until a request
// fails; it fails the test if the endpoint still answers 200 after the
// deploy timeout.
func (x *fn) waitGone(endpoint, path string) {
	x.t.Helper()
	deadline := time.Now().Add(x.h.DeployTimeout)
	for {
		err := x.h.request(context.Background(), fresh, endpoint, path, nil)
		if err != nil {
			return
		}
		if time.Now().After(deadline) {
			x.t.Fatalf("%s still answers %s after scale to zero", endpoint, x.h.DeployTimeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// lastLine returns the last non-empty line of s.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}
