package k8sdriver

import (
	"context"
	"encoding/hex"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/driver"
	"github.com/slessio/sless/k8sdriver/resources"
	"github.com/slessio/sless/k8sdriver/testcluster"
	"github.com/slessio/sless/store/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(testcluster.Wrap(m)) }

// testTimeout bounds one driver call in the integration tests.
const testTimeout = 90 * time.Second

// env is the world of a test that needs outcomes on cue (an OOM kill, a
// deadline, a crash loop's restart count, a refused pod): the shared
// cluster, a fake tenant namespace of its own and the fake build namespace
// (the real node never runs their pods), a driver, the fake kubelet writing
// pod status as script says, and the faked log source. What really runs on
// the node is TestConformance's.
type env struct {
	t       *testing.T
	c       *testcluster.Cluster
	d       *Driver
	cfg     Config
	ns      string
	logs    *fakeKubeletLogs
	kubelet *testcluster.FakeKubeletForTest

	mu     sync.Mutex
	script func(*corev1.Pod) testcluster.Outcome
}

// setup starts (or reuses) the cluster and returns a test's env; change
// adjusts the driver's configuration, client picks its client (nil: admin).
func setup(t *testing.T, change func(*Config), client kubernetes.Interface) *env {
	t.Helper()
	c := testcluster.Get(t)
	ensureBuildNamespace(t, c)
	e := &env{t: t, c: c, ns: tenantNamespace(t, c), logs: &fakeKubeletLogs{}, kubelet: testcluster.NewFakeKubeletForTest(c.Client), script: defaultScript}
	e.cfg = Config{Registry: "registry.test/sless", S3: S3Config{Bucket: "sless-code", Endpoint: "http://s3.test:9000"},
		BuildNamespace: fakeBuildNamespace, Poll: 50 * time.Millisecond, Logs: e.logs}
	if change != nil {
		change(&e.cfg)
	}
	if client == nil {
		client = c.Client
	}
	d, err := New(client, e.cfg)
	if err != nil {
		t.Fatal(err)
	}
	e.d = d
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	report := func(err error) { t.Errorf("%v", err) }
	decide := func(p *corev1.Pod) testcluster.Outcome {
		e.mu.Lock()
		defer e.mu.Unlock()
		return e.script(p)
	}
	e.kubelet.Serve(ctx, e.ns, decide, report)
	e.kubelet.Serve(ctx, fakeBuildNamespace, func(p *corev1.Pod) testcluster.Outcome {
		if p.Labels[resources.LabelNamespace] != e.ns {
			return testcluster.Outcome{}
		}
		return decide(p)
	}, report)
	return e
}

// defaultScript is a healthy world: builds and runs succeed, servers get ready.
func defaultScript(p *corev1.Pod) testcluster.Outcome {
	switch p.Labels[resources.LabelComponent] {
	case "server":
		return testcluster.Outcome{Phase: corev1.PodRunning, Ready: true}
	case "build", "run", "cron":
		return testcluster.Outcome{Phase: corev1.PodSucceeded, Reason: "Completed"}
	}
	return testcluster.Outcome{}
}

// setScript changes what the kubelet stand-in does with new pods.
func (e *env) setScript(f func(*corev1.Pod) testcluster.Outcome) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.script = f
}

func (e *env) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	e.t.Cleanup(cancel)
	return ctx
}

// buildSpec is a version of function fn with code digest seed.
func (e *env) buildSpec(fn string, version int, seed string) driver.BuildSpec {
	sum := strings.Repeat(hex.EncodeToString([]byte(seed)), 64)[:64]
	return driver.BuildSpec{Namespace: e.ns, Function: fn, Version: version, Digest: "sha256:" + sum,
		ZipKey: "code/" + e.ns + "/" + fn + "/" + sum + "/source.zip", ContextKey: "code/" + e.ns + "/" + fn + "/" + sum + "/context-1.tar.gz",
		Config: domain.FunctionConfig{Runtime: domain.RuntimePython311, Entrypoint: "handler.handle", MemoryMB: 128, TimeoutSec: 30,
			EnvVars: map[string]string{"GREETING": "hi " + seed}}}
}

// mustBuild builds a version and returns its workload.
func (e *env) mustBuild(fn string, version int, seed string) driver.Workload {
	e.t.Helper()
	b := e.buildSpec(fn, version, seed)
	res, err := e.d.Build(e.ctx(), b)
	if err != nil || res.Failed || res.Image == "" {
		e.t.Fatalf("Build %s v%d = %+v, %v", fn, version, res, err)
	}
	return driver.Workload{Namespace: e.ns, Function: fn, Version: version, Image: res.Image, Config: b.Config}
}

func (e *env) mustDeploy(w driver.Workload, replicas int) string {
	e.t.Helper()
	ep, err := e.d.Deploy(e.ctx(), driver.Deployment{Workload: w, Replicas: replicas})
	if err != nil {
		e.t.Fatalf("Deploy %s v%d x%d: %v", w.Function, w.Version, replicas, err)
	}
	return ep
}

// mustScale scales w to replicas pods, retiring those behind retire first.
func (e *env) mustScale(w driver.Workload, replicas int, retire []string) []string {
	e.t.Helper()
	eps, err := e.d.Scale(e.ctx(), driver.Deployment{Workload: w, Replicas: replicas, Retire: retire})
	if err != nil {
		e.t.Fatalf("Scale %s v%d x%d: %v", w.Function, w.Version, replicas, err)
	}
	return eps
}

// pods lists the pods of the tenant namespace with the given labels.
func (e *env) pods(ns string, sel map[string]string) []corev1.Pod {
	e.t.Helper()
	list, err := e.c.Client.CoreV1().Pods(ns).List(e.ctx(), metav1.ListOptions{LabelSelector: metav1.FormatLabelSelector(&metav1.LabelSelector{MatchLabels: sel})})
	if err != nil {
		e.t.Fatal(err)
	}
	return list.Items
}

// eventually polls cond until it holds or the test timeout passes.
func (e *env) eventually(what string, cond func() bool) {
	e.t.Helper()
	deadline := time.Now().Add(testTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			e.t.Fatalf("%s did not happen within %s", what, testTimeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// tenantNamespace returns a fresh fake tenant namespace (the driver applies
// its tenant objects); it is deleted when the test ends.
func tenantNamespace(t *testing.T, c *testcluster.Cluster) string {
	ns := realTenantNamespace(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Annotations: testcluster.FakeNamespaceAnnotations}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return ns
}

// fakeBuildNamespace is the build namespace of the fake kubelet's tests.
const fakeBuildNamespace = "sless-builds-fake"

var buildNamespaceOnce sync.Once

// ensureBuildNamespace creates the fake build namespace as the deploy
// manifests create sless-builds, with placeholder credentials Secrets.
func ensureBuildNamespace(t *testing.T, c *testcluster.Cluster) {
	buildNamespaceOnce.Do(func() {
		c.BuildNamespace(t, fakeBuildNamespace, testcluster.FakeNamespaceAnnotations, "test", "test")
	})
}

// fakeKubeletLogs fakes the one thing that needs a kubelet, container
// output: a test says what the pods whose names start with a prefix wrote.
type fakeKubeletLogs struct {
	mu       sync.Mutex
	byPrefix map[string]Logs
	requests []LogRequest
}

func (f *fakeKubeletLogs) set(podPrefix string, l Logs) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.byPrefix == nil {
		f.byPrefix = map[string]Logs{}
	}
	f.byPrefix[podPrefix] = l
}

// ContainerLogs implements LogSource with the longest matching prefix.
func (f *fakeKubeletLogs) ContainerLogs(_ context.Context, r LogRequest) (Logs, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests = append(f.requests, r)
	best := ""
	for p := range f.byPrefix {
		if strings.HasPrefix(r.Pod, p) && len(p) > len(best) {
			best = p
		}
	}
	if best == "" {
		return Logs{}, nil
	}
	return f.byPrefix[best], nil
}

func (f *fakeKubeletLogs) requested() []LogRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]LogRequest(nil), f.requests...)
}
