package k8sdriver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/k8sdriver/testcluster"
	"github.com/slessio/sless/runtimes"
	"github.com/slessio/sless/runtimes/runtimestest"
	"github.com/slessio/sless/store/codestore"
	"github.com/slessio/sless/store/codestore/ziptest"
	"github.com/slessio/sless/workers"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestCronJobRunsAreReportedOnce: a cron trigger's CronJob fires on the
// real node, and its run is reported once with the pod's output, although
// two control planes watch.
func TestCronJobRunsAreReportedOnce(t *testing.T) {
	t.Parallel()
	c := testcluster.Get(t)
	d, code := realNodeDriver(t, c, nil)
	ns := realTenantNamespace(t, c)
	w := buildOnNode(t, d, code, ns, "tick", map[string]string{
		"handler.py": "def handle(event):\n    print('tick', event['trigger'])\n    return {'trigger': event['trigger']}\n"})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := d.ApplySchedule(ctx, workers.CronSpec{Workload: w, Trigger: "every-minute", Schedule: "* * * * *", Enabled: true}); err != nil {
		t.Fatal(err)
	}
	reports := make(chan workers.CronRun, 10)
	for range 2 { // two control planes
		go d.WatchCronRuns(ctx, 300*time.Millisecond, func(r workers.CronRun) { reports <- r })
	}
	var r workers.CronRun
	select {
	case r = <-reports:
	case <-ctx.Done():
		t.Fatalf("no cron run reported\n%s", c.Describe(context.Background(), ns))
	}
	lines := strings.Split(strings.TrimSpace(r.Result.Stdout), "\n")
	if r.Namespace != ns || r.Function != "tick" || r.Trigger != "every-minute" || r.Version != 1 || r.Result.ExitCode != 0 ||
		!strings.Contains(r.Result.Stdout, "tick every-minute") || lines[len(lines)-1] != `{"trigger": "every-minute"}` || !r.Ended.After(r.Started) {
		t.Fatalf("reported %+v", r)
	}
	select {
	case again := <-reports:
		if again.Name == r.Name {
			t.Fatalf("the run %s was reported twice", r.Name)
		}
	case <-time.After(3 * time.Second):
	}
}

// realTenantNamespace returns a fresh tenant namespace name whose pods run
// on the real node (the driver creates it); it is deleted when the test ends.
func realTenantNamespace(t testing.TB, c *testcluster.Cluster) string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	ns := "sless-" + hex.EncodeToString(b)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = c.Client.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
	})
	return ns
}

// buildOnNode uploads a Python function's files as the API does and builds
// version 1 with the driver; the build must succeed.
func buildOnNode(t *testing.T, d *Driver, code *codestore.Store, ns, fn string, files map[string]string) workers.Workload {
	t.Helper()
	return buildWith(t, d, code, ns, fn, 1, domain.RuntimePython311, files)
}

// buildWith uploads a function's files as the API does and builds the
// version with driver d (either driver); the build must succeed.
func buildWith(t testing.TB, d workers.Driver, code *codestore.Store, ns, fn string, version int, rt domain.Runtime, files map[string]string) workers.Workload {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	zipData := ziptest.Files(t, files)
	fl, err := codestore.ValidateZip(zipData, codestore.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	before, after := runtimes.Describe(rt).ImageSteps(codestore.Lookup(fl))
	obj, err := code.Put(ctx, ns, fn, zipData, fl, testcluster.RuntimeImage(string(rt)), codestore.ImageSteps{BeforeCode: before, AfterCode: after})
	if err != nil {
		t.Fatal(err)
	}
	cfg := domain.FunctionConfig{Runtime: rt, Entrypoint: domain.DefaultEntrypoint(rt), MemoryMB: 128, TimeoutSec: 30}
	res, err := d.Build(ctx, workers.BuildSpec{Namespace: ns, Function: fn, Version: version, Digest: obj.Digest, ZipKey: obj.ZipKey, ContextKey: obj.ContextKey, Config: cfg, Code: code})
	if err != nil || res.Failed {
		t.Fatalf("build: %+v, %v", res, err)
	}
	return workers.Workload{Namespace: ns, Function: fn, Version: version, Image: res.Image, Config: cfg}
}

// TestPythonDependenciesOnTheNode: a function whose requirements.txt names
// a wheel vendored in its zip builds through kaniko (pip installs it into
// the image) and its job run imports it on the real node.
func TestPythonDependenciesOnTheNode(t *testing.T) {
	t.Parallel()
	c := testcluster.Get(t)
	d, code := realNodeDriver(t, c, nil)
	ns := realTenantNamespace(t, c)
	wheel, wheelData := runtimestest.PyWheel(t, "tinywheel", "VALUE = 42\n")
	w := buildOnNode(t, d, code, ns, "deps", map[string]string{
		"wheels/" + wheel:  string(wheelData),
		"requirements.txt": "--no-index\n--find-links wheels\ntinywheel==1.0\n",
		"handler.py":       "import tinywheel\n\ndef handle(event):\n    return {'value': tinywheel.VALUE}\n",
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := d.Run(ctx, workers.RunSpec{Workload: w, Name: "deps-1", RunID: 1, Event: []byte(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(res.Stdout), "\n")
	if res.ExitCode != 0 || lines[len(lines)-1] != `{"value": 42}` {
		t.Fatalf("run = %+v", res)
	}
}
