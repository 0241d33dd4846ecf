package k8sdriver

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/driver"
	"github.com/slessio/sless/k8sdriver/resources"
)

// crashLogLines is how much of a crashed container's output goes into the error.
const crashLogLines = 20

// Deploy applies the function's Service and Deployment and waits for the
// rollout: with Replicas > 0 until every pod runs the version and is ready,
// then it returns the endpoint (Config.Endpoint); with 0 until no pod is
// left, returning "". Applying what is already there changes nothing, so a
// redeploy restarts no pod. A version whose container exits before it is
// ready, restarts CrashLoopRestarts times, cannot be pulled, or whose pods
// the cluster refuses (quota, admission) is EUNPROCESSABLE with the end of
// its output; EUNAVAILABLE when ctx ends first; otherwise the mapped API error.
func (d *Driver) Deploy(ctx context.Context, dep driver.Deployment) (string, error) {
	w := dep.Workload
	if err := d.prepare(ctx, w); err != nil {
		return "", err
	}
	if _, err := d.client.CoreV1().Services(w.Namespace).Apply(ctx, resources.Service(w.Namespace, w.Function), applyOpts); err != nil {
		return "", mapErr("apply service", err)
	}
	applied, err := d.client.AppsV1().Deployments(w.Namespace).Apply(ctx, resources.Deployment(dep), applyOpts)
	if err != nil {
		return "", mapErr("apply deployment", err)
	}
	name := applied.Name
	if dep.Replicas <= 0 {
		return "", d.poll(ctx, "deployment "+name+" to scale to zero", func() (bool, error) {
			cur, err := d.client.AppsV1().Deployments(w.Namespace).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, mapErr("get deployment "+name, err)
			}
			return cur.Status.ObservedGeneration >= cur.Generation && cur.Status.Replicas == 0, nil
		})
	}
	err = d.poll(ctx, "rollout of "+name+" v"+strconv.Itoa(w.Version), func() (bool, error) {
		cur, err := d.client.AppsV1().Deployments(w.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, mapErr("get deployment "+name, err)
		}
		if err := deploymentFailure(cur); err != nil {
			return false, err
		}
		pods, err := d.versionPods(ctx, w)
		if err != nil {
			return false, err
		}
		if err := d.crashed(ctx, w, pods); err != nil {
			return false, err
		}
		return rolledOut(cur), nil
	})
	if err != nil {
		return "", err
	}
	if d.cfg.Endpoint == EndpointSlices {
		return d.sliceEndpoint(ctx, w)
	}
	return fmt.Sprintf("http://%s:%d", resources.ServiceHost(w.Namespace, w.Function, d.cfg.ClusterDomain), resources.Port), nil
}

// rolledOut is kubectl rollout status: the controller saw the spec, every
// pod is of the current template and available, and no old pod is left.
func rolledOut(dep *appsv1.Deployment) bool {
	want := int32(1)
	if dep.Spec.Replicas != nil {
		want = *dep.Spec.Replicas
	}
	st := dep.Status
	return st.ObservedGeneration >= dep.Generation && st.UpdatedReplicas == want && st.Replicas == want && st.AvailableReplicas == want
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

// versionPods lists the server pods of the workload's version.
func (d *Driver) versionPods(ctx context.Context, w driver.Workload) ([]corev1.Pod, error) {
	sel := labels.Set{resources.LabelComponent: "server", resources.LabelFunction: w.Function, resources.LabelVersion: strconv.Itoa(w.Version)}
	pods, err := d.client.CoreV1().Pods(w.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		return nil, mapErr("list pods of "+w.Function, err)
	}
	return pods.Items, nil
}

// stuckReasons are container waiting reasons that no waiting fixes.
var stuckReasons = []string{"ErrImagePull", "ImagePullBackOff", "InvalidImageName", "CreateContainerConfigError", "CreateContainerError"}

// crashed returns EUNPROCESSABLE, with the end of the container's last
// output, when a pod of the version crash-loops, exited before it was ever
// ready, or cannot start its container.
func (d *Driver) crashed(ctx context.Context, w driver.Workload, pods []corev1.Pod) error {
	for i := range pods {
		pod := &pods[i]
		if pod.DeletionTimestamp != nil {
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

// sliceEndpoint waits for a ready address of a pod of the version in the
// Service's EndpointSlices and returns the first in address order.
func (d *Driver) sliceEndpoint(ctx context.Context, w driver.Workload) (string, error) {
	var endpoint string
	err := d.poll(ctx, "a ready endpoint of "+w.Function, func() (bool, error) {
		pods, err := d.versionPods(ctx, w)
		if err != nil {
			return false, err
		}
		ours := map[string]bool{}
		for _, p := range pods {
			ours[p.Name] = true
		}
		sel := labels.Set{discoveryv1.LabelServiceName: resources.ObjectName(w.Function)}
		slicesList, err := d.client.DiscoveryV1().EndpointSlices(w.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
		if err != nil {
			return false, mapErr("list endpoint slices of "+w.Function, err)
		}
		var ready []string
		for _, s := range slicesList.Items {
			for _, e := range s.Endpoints {
				if e.TargetRef == nil || !ours[e.TargetRef.Name] || e.Conditions.Ready == nil || !*e.Conditions.Ready {
					continue
				}
				ready = append(ready, e.Addresses...)
			}
		}
		if len(ready) == 0 {
			return false, nil
		}
		slices.Sort(ready)
		endpoint = "http://" + net.JoinHostPort(ready[0], strconv.Itoa(resources.Port))
		return true, nil
	})
	return endpoint, err
}
