package k8sdriver

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/driver"
	"github.com/slessio/sless/k8sdriver/resources"
)

// crashLogLines is how much of a crashed container's output goes into the error.
const crashLogLines = 20

// Deploy is Scale returning one endpoint: the Service's URL, or in
// EndpointSlices mode the first ready pod address, with Replicas > 0; ""
// with 0. Scale's wait is a rollout's: it returns once the function's pods
// are dep.Replicas ready pods of the version and no other is left serving.
// Unlike Scale it never scales the running version down: more replicas of
// it than asked for (the proxy's autoscaler scaled it out) are kept, so a
// rollout that does not change the version stops no pod that serves.
// Applying what is already there changes nothing, so a redeploy restarts no
// pod. A version whose container exits before it is ready, restarts
// CrashLoopRestarts times, cannot be pulled, or whose pods the cluster
// refuses (quota, admission) is EUNPROCESSABLE with the end of its output;
// EUNAVAILABLE when ctx ends first; otherwise the mapped API error.
func (d *Driver) Deploy(ctx context.Context, dep driver.Deployment) (string, error) {
	if dep.Replicas > 0 {
		cur, err := d.client.AppsV1().Deployments(dep.Namespace).Get(ctx, resources.ObjectName(dep.Function), metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return "", mapErr("get deployment of "+dep.Function, err)
		case cur.Spec.Template.Labels[resources.LabelVersion] == strconv.Itoa(dep.Version) && cur.Spec.Replicas != nil:
			dep.Replicas = max(dep.Replicas, int(*cur.Spec.Replicas))
		}
	}
	endpoints, err := d.Scale(ctx, dep)
	if err != nil || len(endpoints) == 0 {
		return "", err
	}
	return endpoints[0], nil
}

// deploymentFailure reports the Deployment conditions that no waiting fixes.
func deploymentFailure(dep *appsv1.Deployment) error {
	for _, c := range dep.Status.Conditions {
		switch {
		case c.Type == appsv1.DeploymentReplicaFailure && c.Status == corev1.ConditionTrue:
			return domain.Errorf(domain.EUNPROCESSABLE, "the cluster refuses the pods of %s: %s", dep.Name, c.Message)
		case c.Type == appsv1.DeploymentProgressing && c.Status == corev1.ConditionFalse && c.Reason == "ProgressDeadlineExceeded":
			return domain.Errorf(domain.EUNPROCESSABLE, "the rollout of %s made no progress: %s", dep.Name, c.Message)
		}
	}
	return nil
}

// stuckReasons are container waiting reasons that no waiting fixes.
var stuckReasons = []string{"ErrImagePull", "ImagePullBackOff", "InvalidImageName", "CreateContainerConfigError", "CreateContainerError"}

// crashed returns EUNPROCESSABLE, with the end of the container's last
// output, when a pod of the version among pods crash-loops, exited before
// it was ever ready, or cannot start its container.
func (d *Driver) crashed(ctx context.Context, w driver.Workload, pods []corev1.Pod) error {
	version := strconv.Itoa(w.Version)
	for i := range pods {
		pod := &pods[i]
		if pod.DeletionTimestamp != nil || pod.Labels[resources.LabelVersion] != version {
			continue
		}
		for _, cs := range pod.Status.ContainerStatuses {
			if cs.Name != resources.ContainerName {
				continue
			}
			if cs.State.Waiting != nil && slices.Contains(stuckReasons, cs.State.Waiting.Reason) {
				return domain.Errorf(domain.EUNPROCESSABLE, "version %d of %s cannot start: %s: %s", w.Version, w.Function, cs.State.Waiting.Reason, cs.State.Waiting.Message)
			}
			if cs.RestartCount < d.cfg.CrashLoopRestarts && (cs.RestartCount == 0 || cs.Ready) {
				continue
			}
			exit := ""
			if t := cs.LastTerminationState.Terminated; t != nil {
				exit = fmt.Sprintf(", exit code %d", t.ExitCode)
			}
			logs, err := d.logs.ContainerLogs(ctx, LogRequest{Namespace: w.Namespace, Pod: pod.Name, Container: resources.ContainerName, Previous: true, TailLines: crashLogLines})
			out := lastLines(logs.Stderr, crashLogLines)
			if err != nil {
				out = "(log unavailable: " + domain.ErrorMessage(err) + ")"
			}
			return domain.Errorf(domain.EUNPROCESSABLE, "version %d of %s crashes (%d restarts%s):\n%s", w.Version, w.Function, cs.RestartCount, exit, out)
		}
	}
	return nil
}
