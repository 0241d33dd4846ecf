package k8sdriver

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/slessio/sless/driver"
	"github.com/slessio/sless/k8sdriver/resources"
)

// TestScale scales a function 1 → 3 → 1 → 0 in both endpoint modes,
// retiring the first pod on the way down: spec.replicas follows, the
// endpoints are the ready pods' distinct addresses (EndpointSlices) or the
// Service's URL once per replica, and the retired pod is given the lowest
// deletion cost and stopped.
func TestScale(t *testing.T) {
	t.Parallel()
	for _, mode := range []EndpointMode{EndpointService, EndpointSlices} {
		t.Run(string(mode), func(t *testing.T) {
			t.Parallel()
			e := setup(t, func(c *Config) { c.Endpoint = mode }, nil)
			w := e.mustBuild("scaled", 1, "sc")
			e.checkEndpoints(w, e.mustScale(w, 1, nil), 1)
			oldest := running(e.pods(e.ns, map[string]string{resources.LabelFunction: w.Function}))[0]

			e.checkEndpoints(w, e.mustScale(w, 3, nil), 3)
			gone := e.watchPod(oldest)
			eps := e.mustScale(w, 1, []string{podEndpoint(oldest.Status.PodIP)})
			e.checkEndpoints(w, eps, 1)
			var last *corev1.Pod
			select {
			case last = <-gone:
			case <-time.After(10 * time.Second):
			}
			if last == nil || last.DeletionTimestamp == nil {
				t.Fatalf("the retired pod %s was not stopped (last seen %+v)", oldest.Name, last)
			}
			if cost := last.Annotations[resources.PodDeletionCost]; cost != resources.RetiredDeletionCost {
				t.Errorf("the retired pod's deletion cost = %q, want %s", cost, resources.RetiredDeletionCost)
			}

			if eps := e.mustScale(w, 0, nil); eps != nil {
				t.Fatalf("Scale to 0 = %q, want nil", eps)
			}
			e.checkEndpoints(w, nil, 0)
		})
	}
}

// checkEndpoints checks that the function runs n pods that are not
// terminating, its Deployment asks for n, and eps are what Scale returns
// for them in the driver's endpoint mode.
func (e *env) checkEndpoints(w driver.Workload, eps []string, n int) {
	e.t.Helper()
	dep, err := e.c.Client.AppsV1().Deployments(e.ns).Get(e.ctx(), resources.ObjectName(w.Function), metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	if got := *dep.Spec.Replicas; got != int32(n) {
		e.t.Errorf("spec.replicas = %d, want %d", got, n)
	}
	pods := running(e.pods(e.ns, map[string]string{resources.LabelFunction: w.Function}))
	if len(pods) != n {
		e.t.Fatalf("%d pods run, want %d", len(pods), n)
	}
	var want []string
	for _, p := range pods {
		if e.cfg.Endpoint == EndpointSlices {
			want = append(want, podEndpoint(p.Status.PodIP))
		} else {
			want = append(want, "http://"+resources.ServiceHost(e.ns, w.Function, e.d.cfg.ClusterDomain)+":8080")
		}
	}
	slices.Sort(want)
	if e.cfg.Endpoint == EndpointSlices && len(slices.Compact(slices.Clone(want))) != n {
		e.t.Fatalf("pods share addresses: %q", want)
	}
	if !slices.Equal(eps, want) {
		e.t.Fatalf("endpoints = %q, want %q", eps, want)
	}
}

// watchPod watches pod from its resourceVersion and sends its last state
// once it is terminating or deleted (nil when the watch ends first).
func (e *env) watchPod(pod corev1.Pod) <-chan *corev1.Pod {
	e.t.Helper()
	w, err := e.c.Client.CoreV1().Pods(pod.Namespace).Watch(e.ctx(), metav1.ListOptions{
		FieldSelector: "metadata.name=" + pod.Name, ResourceVersion: pod.ResourceVersion})
	if err != nil {
		e.t.Fatal(err)
	}
	out := make(chan *corev1.Pod, 1)
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if ok && (ev.Type == watch.Deleted || p.DeletionTimestamp != nil) {
				out <- p
				return
			}
		}
		out <- nil
	}()
	return out
}
