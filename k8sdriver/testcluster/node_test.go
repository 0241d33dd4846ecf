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
