package k8sdriver

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
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

// TestScaleOnTheNode scales a function to 3 pods on the real node: the
// endpoints are 3 distinct addresses, each answered by the pod that has it;
// scaled to 1 with two of them retired, the one left is the third, still
// answering.
func TestScaleOnTheNode(t *testing.T) {
	t.Parallel()
	c, d, w := buildOnNode(t, "scaled", map[string]string{
		"handler.py": "import socket\n\ndef handle(event):\n    return {'pod': socket.gethostname()}\n"})
	ns := w.Namespace
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	scale := func(replicas int, retire []string) []string {
		t.Helper()
		began := time.Now()
		eps, err := d.Scale(ctx, driver.Deployment{Workload: w, Replicas: replicas, Retire: retire})
		if err != nil {
			t.Fatalf("Scale to %d: %v\n%s", replicas, err, c.Describe(context.Background(), ns))
		}
		t.Logf("Scale to %d: %s", replicas, time.Since(began).Round(time.Millisecond))
		return eps
	}
	// answeredBy asks the function at ep which pod answers, and checks
	// that the pod is the one with ep's address.
	answeredBy := func(ep string) string {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, ep+"/", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", ep, err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		var a struct{ Pod string }
		if err := json.Unmarshal(body, &a); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %s %q", ep, resp.Status, body)
		}
		pod, err := c.Client.CoreV1().Pods(ns).Get(ctx, a.Pod, metav1.GetOptions{})
		if err != nil || podEndpoint(pod.Status.PodIP) != ep {
			t.Fatalf("%s was answered by pod %q (%v), which is not at that address", ep, a.Pod, err)
		}
		return a.Pod
	}

	eps := scale(3, nil)
	if len(eps) != 3 || len(slices.Compact(slices.Clone(eps))) != 3 || !slices.IsSorted(eps) {
		t.Fatalf("endpoints of 3 replicas = %q", eps)
	}
	pods := map[string]bool{}
	for _, ep := range eps {
		pods[answeredBy(ep)] = true
	}
	if len(pods) != 3 {
		t.Fatalf("3 endpoints answered from %d pods", len(pods))
	}
	kept := answeredBy(eps[2])

	left := scale(1, eps[:2])
	if !slices.Equal(left, eps[2:]) {
		t.Fatalf("after retiring %q: endpoints %q, want %q", eps[:2], left, eps[2:])
	}
	if got := answeredBy(left[0]); got != kept {
		t.Fatalf("the endpoint left is answered by %s, want %s", got, kept)
	}
}
