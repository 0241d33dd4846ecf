package testcluster_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/slessio/sless/k8sdriver/testcluster"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestJobRunsOnTheNode: a Job's pod runs a runtime image from the node's
// registry on the real node, and its output is read through the API server.
func TestJobRunsOnTheNode(t *testing.T) {
	t.Parallel()
	c := testcluster.Get(t)
	ns := c.Namespace(t, "node")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "hello"}, Spec: batchv1.JobSpec{BackoffLimit: ptr(int32(0)), Template: corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"test": "hello"}},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{
			Name: "c", Image: testcluster.RuntimeImage("python3.11"), ImagePullPolicy: corev1.PullIfNotPresent,
			Command: []string{"python", "-c", "import sys; print('hello from', sys.version_info[:2])"}}}}}}}
	if _, err := c.Client.BatchV1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(90 * time.Second)
	for {
		j, err := c.Client.BatchV1().Jobs(ns).Get(ctx, "hello", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if j.Status.Succeeded == 1 {
			break
		}
		if j.Status.Failed > 0 || time.Now().After(deadline) {
			t.Fatalf("job did not succeed: %+v\n%s", j.Status, c.Describe(ctx, ns))
		}
		time.Sleep(200 * time.Millisecond)
	}
	pods, err := c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "test=hello"})
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("pods: %v, %v", pods, err)
	}
	out, err := c.Client.CoreV1().Pods(ns).GetLogs(pods.Items[0].Name, &corev1.PodLogOptions{}).DoRaw(ctx)
	if err != nil || !strings.Contains(string(out), "hello from (3, 11)") {
		t.Fatalf("logs = %q, %v", out, err)
	}
}

func ptr[T any](v T) *T { return &v }

// runPod runs a pod of the given image and command in a namespace of its
// own and returns its output once it ended.
func runPod(t *testing.T, c *testcluster.Cluster, image string, command ...string) string {
	t.Helper()
	ns := c.Namespace(t, "node")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
		Containers: []corev1.Container{{Name: "c", Image: image, Command: command}}}}
	if _, err := c.Client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for {
		p, err := c.Client.CoreV1().Pods(ns).Get(ctx, "p", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("%v\n%s", err, c.Describe(context.Background(), ns))
		}
		if p.Status.Phase == corev1.PodSucceeded {
			break
		}
		if p.Status.Phase == corev1.PodFailed {
			t.Fatalf("pod failed\n%s", c.Describe(ctx, ns))
		}
		time.Sleep(200 * time.Millisecond)
	}
	out, err := c.Client.CoreV1().Pods(ns).GetLogs("p", &corev1.PodLogOptions{}).DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// TestPodsHaveNoRouteOut: a pod's only route is the bridge's subnet, so
// nothing it sends leaves the machine (checked from its routing table: the
// test sends nothing anywhere).
func TestPodsHaveNoRouteOut(t *testing.T) {
	t.Parallel()
	c := testcluster.Get(t)
	routes := runPod(t, c, testcluster.RuntimeImage("python3.11"), "python", "-c", "print(open('/proc/net/route').read())")
	var dests []string
	for _, line := range strings.Split(strings.TrimSpace(routes), "\n")[1:] {
		if f := strings.Fields(line); len(f) > 2 && f[0] != "lo" {
			dests = append(dests, f[1])
		}
	}
	if len(dests) != 1 || dests[0] == "00000000" {
		t.Fatalf("routes of a pod:\n%s\nwant the bridge's subnet only", routes)
	}
}

// TestAnImageOutsideTheRegistryFailsAtOnce: an image the node's registry
// does not hold fails to pull within seconds with the registry's "not
// found", and nothing tries the internet (no DNS lookup, no dial).
func TestAnImageOutsideTheRegistryFailsAtOnce(t *testing.T) {
	t.Parallel()
	c := testcluster.Get(t)
	ns := c.Namespace(t, "node")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "missing"}, Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
		Containers: []corev1.Container{{Name: "c", Image: "docker.io/library/busybox:1.36"}}}}
	created := time.Now()
	if _, err := c.Client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for {
		p, err := c.Client.CoreV1().Pods(ns).Get(ctx, "missing", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("%v\n%s", err, c.Describe(context.Background(), ns))
		}
		if cs := p.Status.ContainerStatuses; len(cs) == 1 && cs[0].State.Waiting != nil &&
			(cs[0].State.Waiting.Reason == "ErrImagePull" || cs[0].State.Waiting.Reason == "ImagePullBackOff") {
			msg := cs[0].State.Waiting.Message
			if !strings.Contains(msg, "not found") || strings.Contains(msg, "lookup") || strings.Contains(msg, "dial") {
				t.Fatalf("pull error %q: want the node's registry's not found, and no try elsewhere", msg)
			}
			if took := time.Since(created); took > 30*time.Second {
				t.Fatalf("the pull failed only after %s", took)
			}
			t.Logf("failed to pull after %s: %s", time.Since(created).Round(time.Millisecond), msg)
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}
