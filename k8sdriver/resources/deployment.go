package resources

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"

	"github.com/slessio/sless/driver"
)

// serverSelector selects the server pods of a function, whatever their version.
func serverSelector(function string) map[string]string {
	return map[string]string{LabelComponent: "server", LabelFunction: function}
}

// Deployment returns the Deployment that serves a version of a function with
// d.Replicas pods (0 scales it to zero). A new version rolls out one extra
// pod at a time and takes no ready pod away before its successor is ready.
func Deployment(d driver.Deployment) *appsv1ac.DeploymentApplyConfiguration {
	w := d.Workload
	l := objectLabels("server", w.Function, LabelVersion, strconv.Itoa(w.Version))
	pod := functionPod(w, corev1.RestartPolicyAlways, platformEnv(w), ServerSecretName(w))
	pod.Containers[0].
		WithPorts(corev1ac.ContainerPort().WithName("http").WithContainerPort(Port).WithProtocol(corev1.ProtocolTCP)).
		WithReadinessProbe(corev1ac.Probe().
			WithHTTPGet(corev1ac.HTTPGetAction().WithPath(HealthPath).WithPort(intstr.FromInt32(Port))).
			WithPeriodSeconds(2).WithTimeoutSeconds(2).WithFailureThreshold(2))
	maxSurge, maxUnavailable := intstr.FromInt32(1), intstr.FromInt32(0)
	return appsv1ac.Deployment(ObjectName(w.Function), w.Namespace).
		WithLabels(l).
		WithSpec(appsv1ac.DeploymentSpec().
			WithReplicas(int32(max(d.Replicas, 0))).
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(serverSelector(w.Function))).
			WithRevisionHistoryLimit(3).
			WithProgressDeadlineSeconds(600).
			WithStrategy(appsv1ac.DeploymentStrategy().
				WithType("RollingUpdate").
				WithRollingUpdate(appsv1ac.RollingUpdateDeployment().WithMaxSurge(maxSurge).WithMaxUnavailable(maxUnavailable))).
			WithTemplate(corev1ac.PodTemplateSpec().WithLabels(l).WithSpec(pod)))
}

// Service returns the ClusterIP Service of a function on port Port.
func Service(namespace, function string) *corev1ac.ServiceApplyConfiguration {
	return corev1ac.Service(ObjectName(function), namespace).
		WithLabels(objectLabels("server", function)).
		WithSpec(corev1ac.ServiceSpec().
			WithType(corev1.ServiceTypeClusterIP).
			WithSelector(serverSelector(function)).
			WithPorts(corev1ac.ServicePort().WithName("http").WithPort(Port).WithTargetPort(intstr.FromInt32(Port)).WithProtocol(corev1.ProtocolTCP)))
}

// PodDeletionCost is the annotation by which the ReplicaSet controller
// (Kubernetes 1.22 and later) chooses which of its ready pods to delete
// when it scales down: the lowest cost first, 0 when absent.
const PodDeletionCost = "controller.kubernetes.io/pod-deletion-cost"

// RetiredDeletionCost is the deletion cost of a pod Scale retires: below
// every other pod's, so it goes first.
const RetiredDeletionCost = "-1000"

// RetirePatch returns the JSON merge patch that marks a pod to be deleted
// first (RetiredDeletionCost). A merge patch, not an apply: a pod that is
// gone in the meantime must stay gone, not be created from the patch.
func RetirePatch() []byte {
	return []byte(`{"metadata":{"annotations":{"` + PodDeletionCost + `":"` + RetiredDeletionCost + `"}}}`)
}
