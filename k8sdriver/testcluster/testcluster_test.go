package testcluster_test

import (
	"context"
	"testing"
	"time"

	"github.com/slessio/sless/k8sdriver/testcluster"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestMain(m *testing.M) { testcluster.Main(m) }

// TestJobRunsThroughTheFakeKubelet: the controller manager turns a Job of a
// fake namespace into a pod, the fake kubelet ends it (the real node never
// gets it), and the Job completes.
func TestJobRunsThroughTheFakeKubelet(t *testing.T) {
	t.Parallel()
	c := testcluster.Get(t)
	ns := c.FakeNamespace(t, "tc")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	testcluster.NewFakeKubeletForTest(c.Client).Serve(ctx, ns, func(*corev1.Pod) testcluster.Outcome {
		return testcluster.Outcome{Phase: corev1.PodSucceeded, Reason: "Completed"}
	}, func(err error) { t.Error(err) })
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "j"}, Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}}}
	if _, err := c.Client.BatchV1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for {
		j, err := c.Client.BatchV1().Jobs(ns).Get(ctx, "j", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if j.Status.Succeeded == 1 && j.Status.CompletionTime != nil {
			pods, err := c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
			if err != nil || len(pods.Items) != 1 || pods.Items[0].Spec.NodeName != testcluster.FakeNodeName {
				t.Fatalf("pods = %+v, %v; want one on %s", pods, err, testcluster.FakeNodeName)
			}
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("job did not complete: %+v\n%s", j.Status, c.Logs(20))
		case <-time.After(100 * time.Millisecond):
		}
	}
}
