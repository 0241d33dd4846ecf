package k8sdriver

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/slessio/sless/driver"
	"github.com/slessio/sless/k8sdriver/resources"
)

// Scale implements driver.Driver: it applies the function's Service and
// Deployment with dep.Replicas pods of dep's version and waits until the
// function's pods, but for terminating and finished ones, are exactly
// dep.Replicas ready pods of the version (with 0: none are left). A change
// of the replica count alone returns as soon as the new pods are ready or
// the extra ones terminating: the Deployment's status is not waited for.
// Scaling down, the pods behind dep.Retire's endpoints are made the
// ReplicaSet controller's first choice (resources.PodDeletionCost).
//
// The endpoints, sorted, nil with 0 replicas: in EndpointSlices mode
// http://<ip>:8080 of each of those pods, once the Service's EndpointSlices
// list it ready. In Service mode the Service's URL once per replica:
// kube-proxy spreads the connections over the pods, and the proxy, which
// counts requests per endpoint, still bounds the concurrency per replica
// (on average: kube-proxy balances connections, not requests). Retire then
// names the Service, no pod, so the controller picks which pods stop.
//
// The namespace secrets the version uses are opened and applied as its
// Secret (resources.ServerSecret) before the Deployment, with the
// function's Service as its owner; with 0 replicas nothing is opened, so a
// version whose secret was deleted can still be stopped. Once the wait is
// over, only the version's pods run: the other versions' Secrets are
// deleted.
//
// Errors are Deploy's; a secret that cannot be opened is EUNPROCESSABLE.
func (d *Driver) Scale(ctx context.Context, dep driver.Deployment) ([]string, error) {
	w := dep.Workload
	var values driver.SecretValues
	if dep.Replicas > 0 {
		var err error
		if values, err = d.openSecrets(ctx, w); err != nil {
			return nil, err
		}
	}
	if err := d.prepare(ctx, w); err != nil {
		return nil, err
	}
	svc, err := d.client.CoreV1().Services(w.Namespace).Apply(ctx, resources.Service(w.Namespace, w.Function), applyOpts)
	if err != nil {
		return nil, mapErr("apply service", err)
	}
	if s := resources.ServerSecret(w, values); s != nil && dep.Replicas > 0 {
		if err := d.applySecret(ctx, s.WithOwnerReferences(resources.ServiceOwner(svc)), "secrets of "+w.Function+" v"+strconv.Itoa(w.Version)); err != nil {
			return nil, err
		}
	}
	if err := d.retire(ctx, dep); err != nil {
		return nil, err
	}
	applied, err := d.client.AppsV1().Deployments(w.Namespace).Apply(ctx, resources.Deployment(dep), applyOpts)
	if err != nil {
		return nil, mapErr("apply deployment", err)
	}
	var endpoints []string
	what := fmt.Sprintf("%s v%d to serve with %d ready pods", applied.Name, w.Version, max(dep.Replicas, 0))
	err = d.poll(ctx, what, func() (done bool, err error) {
		endpoints, done, err = d.serving(ctx, dep, applied.Name)
		return done, err
	})
	if err != nil {
		return nil, err
	}
	if err := d.deleteSecrets(ctx, w.Namespace, resources.SupersededServerSecrets(w), "secrets of the other versions of "+w.Function); err != nil {
		return nil, err
	}
	return endpoints, nil
}

// serving reports whether the function serves dep (see Scale) and its
// endpoints when it does; the version's failures are its errors.
func (d *Driver) serving(ctx context.Context, dep driver.Deployment, name string) ([]string, bool, error) {
	w := dep.Workload
	cur, err := d.client.AppsV1().Deployments(w.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, false, mapErr("get deployment "+name, err)
	}
	pods, err := d.serverPods(ctx, w)
	if err != nil {
		return nil, false, err
	}
	if dep.Replicas > 0 {
		if err := deploymentFailure(cur); err != nil {
			return nil, false, err
		}
		if err := d.crashed(ctx, w, pods); err != nil {
			return nil, false, err
		}
	}
	if cur.Status.ObservedGeneration < cur.Generation {
		return nil, false, nil
	}
	version := strconv.Itoa(w.Version)
	var running []corev1.Pod
	for _, p := range pods {
		if !active(&p) {
			continue
		}
		if p.Labels[resources.LabelVersion] != version || !ready(&p) {
			return nil, false, nil
		}
		running = append(running, p)
	}
	switch {
	case len(running) != max(dep.Replicas, 0):
		return nil, false, nil
	case len(running) == 0:
		return nil, true, nil
	case d.cfg.Endpoint == EndpointSlices:
		endpoints, err := d.sliceEndpoints(ctx, w, running)
		return endpoints, err == nil && len(endpoints) == len(running), err
	}
	url := fmt.Sprintf("http://%s:%d", resources.ServiceHost(w.Namespace, w.Function, d.cfg.ClusterDomain), resources.Port)
	return slices.Repeat([]string{url}, len(running)), true, nil
}

// sliceEndpoints returns the sorted endpoints of those of pods that the
// Service's EndpointSlices list ready and not terminating, one per pod.
func (d *Driver) sliceEndpoints(ctx context.Context, w driver.Workload, pods []corev1.Pod) ([]string, error) {
	ours := map[string]bool{}
	for _, p := range pods {
		ours[p.Name] = true
	}
	sel := labels.Set{discoveryv1.LabelServiceName: resources.ObjectName(w.Function)}
	list, err := d.client.DiscoveryV1().EndpointSlices(w.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		return nil, mapErr("list endpoint slices of "+w.Function, err)
	}
	byPod := map[string]string{}
	for _, s := range list.Items {
		for _, e := range s.Endpoints {
			c := e.Conditions
			if e.TargetRef == nil || !ours[e.TargetRef.Name] || len(e.Addresses) == 0 ||
				c.Ready == nil || !*c.Ready || (c.Terminating != nil && *c.Terminating) {
				continue
			}
			byPod[e.TargetRef.Name] = podEndpoint(e.Addresses[0])
		}
	}
	endpoints := make([]string, 0, len(byPod))
	for _, ep := range byPod {
		endpoints = append(endpoints, ep)
	}
	slices.Sort(endpoints)
	return endpoints, nil
}

// retire gives the pods behind dep.Retire's endpoints the lowest deletion
// cost when the function runs more pods than dep.Replicas, before Scale
// lowers the Deployment's replicas. The ReplicaSet controller sees the
// annotation first in practice, not by guarantee: the patch reaches it
// directly, the scale-down only through the Deployment controller.
func (d *Driver) retire(ctx context.Context, dep driver.Deployment) error {
	if len(dep.Retire) == 0 {
		return nil
	}
	pods, err := d.serverPods(ctx, dep.Workload)
	if err != nil {
		return err
	}
	pods = slices.DeleteFunc(pods, func(p corev1.Pod) bool { return !active(&p) })
	if len(pods) <= dep.Replicas {
		return nil
	}
	for _, p := range pods {
		if p.Status.PodIP == "" || !slices.Contains(dep.Retire, podEndpoint(p.Status.PodIP)) ||
			p.Annotations[resources.PodDeletionCost] == resources.RetiredDeletionCost {
			continue
		}
		_, err := d.client.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.MergePatchType, resources.RetirePatch(), metav1.PatchOptions{FieldManager: FieldManager})
		if ignoreNotFound(err) != nil {
			return mapErr("retire pod "+p.Name, err)
		}
	}
	return nil
}

// serverPods lists the server pods of the function, of every version.
func (d *Driver) serverPods(ctx context.Context, w driver.Workload) ([]corev1.Pod, error) {
	sel := labels.Set{resources.LabelComponent: "server", resources.LabelFunction: w.Function}
	pods, err := d.client.CoreV1().Pods(w.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		return nil, mapErr("list pods of "+w.Function, err)
	}
	return pods.Items, nil
}

// active is the ReplicaSet controller's notion of a pod it counts: neither
// terminating nor finished.
func active(p *corev1.Pod) bool {
	return p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
}

// ready reports the pod's Ready condition (its readiness probe passed).
func ready(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// podEndpoint is the endpoint of a pod address: Scale returns it and
// Retire names it.
func podEndpoint(ip string) string {
	return "http://" + net.JoinHostPort(ip, strconv.Itoa(resources.Port))
}
