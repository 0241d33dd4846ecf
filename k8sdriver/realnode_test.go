package k8sdriver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/driver"
	"github.com/slessio/sless/internal/testutil"
	"github.com/slessio/sless/k8sdriver/testcluster"
	"github.com/slessio/sless/runtimes"
	"github.com/slessio/sless/runtimes/runtimestest"
	"github.com/slessio/sless/store/codestore"
	"github.com/slessio/sless/store/codestore/ziptest"
)

// TestCronJobRunsAreReportedOnce: a cron trigger's CronJob fires on the
// real node, and its run is reported once with the pod's output, although
// two control planes watch.
func TestCronJobRunsAreReportedOnce(t *testing.T) {
	t.Parallel()
	c, d, w := buildOnNode(t, "tick", map[string]string{
		"handler.py": "def handle(event):\n    print('tick', event['trigger'])\n    return {'trigger': event['trigger']}\n"})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := d.ApplySchedule(ctx, driver.CronSpec{Workload: w, Trigger: "every-minute", Schedule: "* * * * *", Enabled: true}); err != nil {
		t.Fatal(err)
	}
	reports := make(chan driver.CronRun, 10)
	for range 2 { // two control planes
		go d.watchCronRuns(ctx, 300*time.Millisecond, func(r driver.CronRun) { reports <- r })
	}
	var r driver.CronRun
	select {
	case r = <-reports:
	case <-ctx.Done():
		t.Fatalf("no cron run reported\n%s", c.Describe(context.Background(), w.Namespace))
	}
	lines := strings.Split(strings.TrimSpace(r.Result.Stdout), "\n")
	if r.Namespace != w.Namespace || r.Function != "tick" || r.Trigger != "every-minute" || r.Version != 1 || r.Result.ExitCode != 0 ||
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
	ns := "sless-" + randomHex(8)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = c.Client.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
	})
	return ns
}

// buildOnNode builds version 1 of a Python function's files, uploaded as
// the API does, in a fresh tenant namespace on the real node with
// realNodeDriver's driver; the build must succeed.
func buildOnNode(t *testing.T, fn string, files map[string]string) (*testcluster.Cluster, *Driver, driver.Workload) {
	t.Helper()
	c := testcluster.Get(t)
	d, code := realNodeDriver(t, c, nil)
	return c, d, buildWith(t, d, code, realTenantNamespace(t, c), fn, 1, domain.RuntimePython311, files)
}

// buildWith uploads a function's files as the API does and builds the
// version with driver d (either driver); the build must succeed.
func buildWith(t testing.TB, d driver.Driver, code *codestore.Store, ns, fn string, version int, rt domain.Runtime, files map[string]string) driver.Workload {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	zipData := ziptest.Files(t, files)
	fl, err := codestore.ValidateZip(zipData, codestore.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	before, after := runtimes.Describe(rt).ImageSteps(codestore.Lookup(fl))
	obj, err := code.Put(ctx, ns, fn, 1, zipData, fl, testcluster.RuntimeImage(string(rt)), codestore.ImageSteps{BeforeCode: before, AfterCode: after})
	if err != nil {
		t.Fatal(err)
	}
	cfg := domain.FunctionConfig{Runtime: rt, Entrypoint: domain.DefaultEntrypoint(rt), MemoryMB: 128, TimeoutSec: 30}
	res, err := d.Build(ctx, driver.BuildSpec{Namespace: ns, Function: fn, Version: version, Digest: obj.Digest, ZipKey: obj.ZipKey, ContextKey: obj.ContextKey, Config: cfg, Code: code})
	if err != nil || res.Failed {
		t.Fatalf("build: %+v, %v", res, err)
	}
	return driver.Workload{Namespace: ns, Function: fn, Version: version, Image: res.Image, Config: cfg}
}

// TestPythonDependenciesOnTheNode: a function whose requirements.txt names
// a wheel vendored in its zip builds through kaniko (pip installs it into
// the image) and its job run imports it on the real node.
func TestPythonDependenciesOnTheNode(t *testing.T) {
	t.Parallel()
	wheel, wheelData := runtimestest.PyWheel(t, "tinywheel", "VALUE = 42\n")
	_, d, w := buildOnNode(t, "deps", map[string]string{
		"wheels/" + wheel:  string(wheelData),
		"requirements.txt": "--no-index\n--find-links wheels\ntinywheel==1.0\n",
		"handler.py":       "import tinywheel\n\ndef handle(event):\n    return {'value': tinywheel.VALUE}\n",
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := d.Run(ctx, driver.RunSpec{Workload: w, Name: "deps-1", RunID: 1, Event: []byte(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(res.Stdout), "\n")
	if res.ExitCode != 0 || lines[len(lines)-1] != `{"value": 42}` {
		t.Fatalf("run = %+v", res)
	}
}

// TestNetworkPolicyIsEnforced: with the node enforcing NetworkPolicy
// (kube-router), a tenant's pod reaches neither another tenant's pod nor a
// service on this machine's bridge address (a private address, as a
// database of the operator's would be), while the control plane's
// namespace reaches both: the tenant objects the driver applies do what
// they say.
func TestNetworkPolicyIsEnforced(t *testing.T) {
	t.Parallel()
	c := testcluster.Get(t)
	c.EnforceNetworkPolicy(t)
	cp := c.Namespace(t, "np-control") // the control plane's, for this test's driver
	d, _ := realNodeDriver(t, c, func(cfg *Config) { cfg.ControlPlaneNamespace = cp })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	a, b := realTenantNamespace(t, c), realTenantNamespace(t, c)
	for _, ns := range []string{a, b} {
		if err := d.EnsureNamespace(ctx, ns); err != nil {
			t.Fatal(err)
		}
	}

	server := restrictedPod("server", "import http.server, socketserver\n"+
		"socketserver.TCPServer(('', 8080), http.server.SimpleHTTPRequestHandler).serve_forever()\n")
	server.Spec.RestartPolicy = corev1.RestartPolicyAlways
	if _, err := c.Client.CoreV1().Pods(b).Create(ctx, server, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var serverIP string
	testutil.WaitFor(t, 2*time.Minute, func() bool {
		p, err := c.Client.CoreV1().Pods(b).Get(ctx, "server", metav1.GetOptions{})
		serverIP = p.Status.PodIP
		return err == nil && p.Status.Phase == corev1.PodRunning && serverIP != ""
	})
	probes := 0
	probe := func(ns, target string) string {
		t.Helper()
		probes++
		name := fmt.Sprintf("probe-%d", probes)
		pod := restrictedPod(name, "import socket\ntry:\n    socket.create_connection(("+
			fmt.Sprintf("%q, %s", strings.Split(target, ":")[0], strings.Split(target, ":")[1])+"), timeout=3)\n"+
			"    print('open')\nexcept OSError as e:\n    print('blocked', e)\n")
		if _, err := c.Client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		var out string
		testutil.WaitFor(t, 2*time.Minute, func() bool {
			p, err := c.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil || (p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed) {
				return false
			}
			raw, err := c.Client.CoreV1().Pods(ns).GetLogs(name, &corev1.PodLogOptions{}).DoRaw(ctx)
			out = strings.TrimSpace(string(raw))
			return err == nil
		})
		return out
	}
	// eventually waits for a probe's answer to start with want: the
	// firewall follows new pods and policies within seconds.
	eventually := func(ns, target, want string) {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for {
			got := probe(ns, target)
			if strings.HasPrefix(got, want) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("from %s to %s: %q, want %s", ns, target, got, want)
			}
			time.Sleep(2 * time.Second)
		}
	}
	podB := serverIP + ":8080"
	hostService := c.Node.Registry.Host // a service of this machine on the bridge
	eventually(cp, podB, "open")        // the server answers, and the control plane may reach it
	eventually(a, podB, "blocked")
	eventually(a, hostService, "blocked")
	if got := probe(a, podB); !strings.HasPrefix(got, "blocked") {
		t.Fatalf("tenant %s reached tenant %s's pod on a second try: %q", a, b, got)
	}
	if got := probe(cp, hostService); !strings.HasPrefix(got, "open") {
		t.Fatalf("the control plane's namespace cannot reach %s: %q (the probe proves nothing)", hostService, got)
	}
}

// restrictedPod runs a Python script in the Python runtime image, as Pod
// Security "restricted" requires (tenant namespaces enforce it).
func restrictedPod(name, script string) *corev1.Pod {
	no, yes := false, true
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyNever,
		SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: &yes, RunAsUser: new(int64(10001)),
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
		Containers: []corev1.Container{{Name: "c", Image: testcluster.RuntimeImage("python3.11"), Command: []string{"python", "-c", script},
			SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: &no, Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}}},
	}}
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
