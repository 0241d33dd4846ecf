package k8sdriver

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/driver"
	"github.com/slessio/sless/k8sdriver/resources"
	"github.com/slessio/sless/k8sdriver/testcluster"
)

// TestDeploy rolls a version out, applies it again (nothing changes, no pod
// restarts), scales it to zero and back, and rolls a second version over it.
func TestDeploy(t *testing.T) {
	t.Parallel()
	e := setup(t, nil, nil)
	w1 := e.mustBuild("web", 1, "v1")
	ep := e.mustDeploy(w1, 2)
	if want := "http://web." + e.ns + ".svc.cluster.local:8080"; ep != want {
		t.Fatalf("endpoint = %q, want %q", ep, want)
	}
	deps := e.c.Client.AppsV1().Deployments(e.ns)
	before, err := deps.Get(e.ctx(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	podsBefore := podUIDs(e.pods(e.ns, map[string]string{resources.LabelFunction: "web"}))
	if all := e.pods(e.ns, map[string]string{resources.LabelFunction: "web"}); len(all) != 2 {
		for _, p := range all[:3] {
			t.Logf("%s phase=%s reason=%s msg=%s %+v", p.Name, p.Status.Phase, p.Status.Reason, p.Status.Message, p.Status.ContainerStatuses)
		}
		t.Fatalf("pods = %d, want 2", len(all))
	}
	if again := e.mustDeploy(w1, 2); again != ep {
		t.Fatalf("redeploy moved the endpoint to %q", again)
	}
	// The generation counts changes of the spec; the resource version also
	// moves with the controller's status updates, which Deploy (waiting on
	// the pods, not the status) may return before.
	after, _ := deps.Get(e.ctx(), "web", metav1.GetOptions{})
	if after.Generation != before.Generation {
		t.Errorf("applying the same version changed the Deployment's spec (generation %d -> %d)", before.Generation, after.Generation)
	}
	if podsAfter := podUIDs(e.pods(e.ns, map[string]string{resources.LabelFunction: "web"})); podsAfter != podsBefore {
		t.Errorf("applying the same version replaced pods")
	}

	if ep, err := e.d.Deploy(e.ctx(), driver.Deployment{Workload: w1, Replicas: 0}); err != nil || ep != "" {
		t.Fatalf("scale to zero = %q, %v", ep, err)
	}
	if n := len(running(e.pods(e.ns, map[string]string{resources.LabelFunction: "web"}))); n != 0 {
		t.Errorf("%d pods not terminating after scale to zero", n)
	}
	e.eventually("the stopped pods to go", func() bool { return len(e.pods(e.ns, map[string]string{resources.LabelFunction: "web"})) == 0 })
	e.mustDeploy(w1, 1)

	w2 := e.mustBuild("web", 2, "v2")
	e.mustDeploy(w2, 1)
	pods := running(e.pods(e.ns, map[string]string{resources.LabelFunction: "web"}))
	if len(pods) != 1 || pods[0].Labels[resources.LabelVersion] != "2" || pods[0].Spec.Containers[0].Image != w2.Image {
		t.Fatalf("after rolling out v2: %d pods, labels %v", len(pods), pods[0].Labels)
	}
	env := pods[0].Spec.Containers[0].EnvFrom
	if len(env) != 1 || env[0].SecretRef.Name != resources.EnvSecretName("web", w2.Config.EnvVars) {
		t.Errorf("v2 pod envFrom = %+v", env)
	}
	if _, err := e.c.Client.CoreV1().Secrets(e.ns).Get(e.ctx(), resources.EnvSecretName("web", w2.Config.EnvVars), metav1.GetOptions{}); err != nil {
		t.Errorf("v2's environment Secret: %v", err)
	}
}

// running drops pods that are terminating.
func running(pods []corev1.Pod) []corev1.Pod {
	var out []corev1.Pod
	for _, p := range pods {
		if p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out
}

func podUIDs(pods []corev1.Pod) string {
	var ids []string
	for _, p := range pods {
		ids = append(ids, string(p.UID))
	}
	return strings.Join(ids, ",")
}

// TestTenantNamespace: the first deploy into a namespace makes it a tenant
// namespace; applying it again with a new driver changes nothing.
func TestTenantNamespace(t *testing.T) {
	t.Parallel()
	e := setup(t, nil, nil)
	if err := e.d.EnsureNamespace(e.ctx(), e.ns); err != nil {
		t.Fatal(err)
	}
	ns, err := e.c.Client.CoreV1().Namespaces().Get(e.ctx(), e.ns, metav1.GetOptions{})
	if err != nil || ns.Labels["pod-security.kubernetes.io/enforce"] != "restricted" {
		t.Fatalf("namespace = %v, %v", ns.Labels, err)
	}
	versions := func() string {
		np, err1 := e.c.Client.NetworkingV1().NetworkPolicies(e.ns).Get(e.ctx(), resources.NetworkPolicyName, metav1.GetOptions{})
		q, err2 := e.c.Client.CoreV1().ResourceQuotas(e.ns).Get(e.ctx(), resources.QuotaName, metav1.GetOptions{})
		lr, err3 := e.c.Client.CoreV1().LimitRanges(e.ns).Get(e.ctx(), resources.LimitRangeName, metav1.GetOptions{})
		n, err4 := e.c.Client.CoreV1().Namespaces().Get(e.ctx(), e.ns, metav1.GetOptions{})
		for _, err := range []error{err1, err2, err3, err4} {
			if err != nil {
				t.Fatal(err)
			}
		}
		return strings.Join([]string{np.ResourceVersion, q.ResourceVersion, lr.ResourceVersion, n.ResourceVersion}, ",")
	}
	// The quota controller writes the quota's status once after it was
	// created, which changes its resourceVersion: wait for that first.
	e.eventually("the quota's status", func() bool {
		q, err := e.c.Client.CoreV1().ResourceQuotas(e.ns).Get(e.ctx(), resources.QuotaName, metav1.GetOptions{})
		return err == nil && len(q.Status.Hard) > 0 && q.Status.Used != nil
	})
	before := versions()
	fresh, err := New(e.c.Client, e.cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := fresh.EnsureNamespace(e.ctx(), e.ns); err != nil {
		t.Fatal(err)
	}
	if after := versions(); after != before {
		t.Errorf("applying the tenant objects again changed them: %s -> %s", before, after)
	}
}

// TestDeployCrashLoop: a version whose container keeps exiting is
// EUNPROCESSABLE with the end of its previous container's output.
func TestDeployCrashLoop(t *testing.T) {
	t.Parallel()
	e := setup(t, nil, nil)
	w := e.mustBuild("noload", 1, "x")
	e.setScript(func(p *corev1.Pod) testcluster.Outcome {
		if p.Labels[resources.LabelComponent] == "server" {
			return testcluster.Outcome{Phase: corev1.PodRunning, Restarts: 1, ExitCode: 1, Reason: "Error"}
		}
		return defaultScript(p)
	})
	e.logs.set("noload-", Logs{Stderr: "Traceback (most recent call last):\nRuntimeError: cannot load: SAMPLE_SETTING is missing\n"})
	_, err := e.d.Deploy(e.ctx(), driver.Deployment{Workload: w, Replicas: 1})
	if domain.ErrorCode(err) != domain.EUNPROCESSABLE || !strings.Contains(domain.ErrorMessage(err), "cannot load: SAMPLE_SETTING is missing") ||
		!strings.Contains(domain.ErrorMessage(err), "exit code 1") {
		t.Fatalf("Deploy of a version that exits at load = %v; want EUNPROCESSABLE with its stderr", err)
	}
	previous := false
	for _, r := range e.logs.requested() {
		previous = previous || (r.Previous && strings.HasPrefix(r.Pod, "noload-"))
	}
	if !previous {
		t.Error("the crash output was not read from the previous container")
	}
	// A good version deploys over it.
	e.setScript(defaultScript)
	w2 := e.mustBuild("noload", 2, "y")
	e.mustDeploy(w2, 1)
}

// TestDeployRefusedPods: pods the cluster refuses (here: over the tenant
// quota) make Deploy fail with EUNPROCESSABLE instead of waiting forever.
func TestDeployRefusedPods(t *testing.T) {
	t.Parallel()
	e := setup(t, func(c *Config) { c.Quota = map[string]string{"pods": "1"} }, nil)
	w := e.mustBuild("big", 1, "q")
	_, err := e.d.Deploy(e.ctx(), driver.Deployment{Workload: w, Replicas: 3})
	if domain.ErrorCode(err) != domain.EUNPROCESSABLE || !strings.Contains(domain.ErrorMessage(err), "quota") {
		t.Fatalf("Deploy over the quota = %v; want EUNPROCESSABLE naming the quota", err)
	}
}

// TestDeployEndpointSlices: in slice mode the endpoint is the address of a
// ready pod of the deployed version, as the EndpointSlice controller lists it.
func TestDeployEndpointSlices(t *testing.T) {
	t.Parallel()
	e := setup(t, func(c *Config) { c.Endpoint = EndpointSlices }, nil)
	w := e.mustBuild("direct", 1, "s")
	ep := e.mustDeploy(w, 1)
	pods := e.pods(e.ns, map[string]string{resources.LabelFunction: "direct", resources.LabelVersion: strconv.Itoa(w.Version)})
	if len(pods) != 1 || ep != "http://"+pods[0].Status.PodIP+":8080" {
		t.Fatalf("endpoint = %q, want the pod's address (%d pods)", ep, len(pods))
	}
}

// TestWatchCrashLoops: a served version that starts crash-looping after a
// successful Deploy is reported once, and deploying it again is refused.
func TestWatchCrashLoops(t *testing.T) {
	t.Parallel()
	e := setup(t, nil, nil)
	w := e.mustBuild("flaky", 1, "cl")
	e.mustDeploy(w, 1)
	reports := make(chan [2]string, 10)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go e.d.watchCrashLoops(ctx, 50*time.Millisecond, func(ns, fn string) {
		if ns == e.ns {
			reports <- [2]string{ns, fn}
		}
	})
	pod := running(e.pods(e.ns, map[string]string{resources.LabelFunction: "flaky"}))[0]
	if _, err := e.kubelet.Set(e.ctx(), &pod, testcluster.Outcome{Phase: corev1.PodRunning, Restarts: 3, ExitCode: 1, Reason: "Error"}); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-reports:
		if r[1] != "flaky" {
			t.Fatalf("reported %v", r)
		}
	case <-time.After(testTimeout):
		t.Fatal("the crash loop was not reported")
	}
	e.logs.set("flaky-", Logs{Stderr: "dying on purpose\n"})
	if _, err := e.d.Deploy(e.ctx(), driver.Deployment{Workload: w, Replicas: 1}); domain.ErrorCode(err) != domain.EUNPROCESSABLE ||
		!strings.Contains(domain.ErrorMessage(err), "dying on purpose") {
		t.Fatalf("Deploy of the crash-looping version = %v; want EUNPROCESSABLE with its stderr", err)
	}
	select {
	case r := <-reports:
		t.Errorf("reported twice: %v", r)
	case <-time.After(300 * time.Millisecond):
	}
}
