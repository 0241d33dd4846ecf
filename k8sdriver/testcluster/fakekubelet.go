package testcluster

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// FakeKubeletForTest writes pod status as a kubelet would after starting,
// stopping or restarting the containers, for tests that need an outcome the
// real node would take long or be unable to produce on cue (an OOM kill, a
// deadline, a restart count). No container runs; a test says what each one
// did. Its pods live in fake namespaces (Cluster.FakeNamespace), which the
// real scheduler never places on the real node; it binds them to a Node of
// its own, FakeNodeName, which runs nothing.
type FakeKubeletForTest struct {
	client   kubernetes.Interface
	nextIP   atomic.Uint32
	nodeOnce sync.Once
	nodeErr  error
}

// FakeNodeName is the Node the fake kubelet binds pods to: controllers such
// as the EndpointSlice controller skip pods that run on no known node. It
// carries FakeNodeLabel and a NoSchedule taint of that key, so the scheduler
// places nothing there.
const FakeNodeName = "fake-node"

// FakeNodeLabel is the label of the fake node, and the node selector that a
// fake namespace gives its pods (the PodNodeSelector admission plugin):
// the real node lacks it, so the scheduler leaves those pods to the fake kubelet.
const FakeNodeLabel = "sless.dev/fake-node"

// NewFakeKubeletForTest returns a fake kubelet that writes status through client.
func NewFakeKubeletForTest(client kubernetes.Interface) *FakeKubeletForTest {
	return &FakeKubeletForTest{client: client}
}

// Outcome is what happened to a pod's containers.
type Outcome struct {
	// Phase is Running, Succeeded or Failed; "" leaves the pod Pending.
	Phase corev1.PodPhase
	// Ready marks a Running pod's containers ready (readiness probe passed).
	Ready bool
	// ExitCode of terminated containers (Succeeded: 0).
	ExitCode int32
	// Reason of a termination (Error, Completed, OOMKilled, DeadlineExceeded).
	Reason string
	// Restarts, with Phase Running, says the containers keep exiting with
	// ExitCode and wait in CrashLoopBackOff.
	Restarts int32
}

// Set binds pod to FakeNodeName, as the scheduler would, then writes its status
// as o says and returns the updated pod.
func (k *FakeKubeletForTest) Set(ctx context.Context, pod *corev1.Pod, o Outcome) (*corev1.Pod, error) {
	if pod.Spec.NodeName == "" {
		if err := k.bind(ctx, pod); err != nil {
			return nil, err
		}
		fresh, err := k.client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		pod = fresh
	}
	p := pod.DeepCopy()
	now := metav1.Now()
	p.Status.Phase = o.Phase
	if p.Status.StartTime == nil {
		p.Status.StartTime = &now
	}
	if p.Status.PodIP == "" {
		n := k.nextIP.Add(1)
		p.Status.PodIP = fmt.Sprintf("10.244.%d.%d", n/250, n%250+1)
		p.Status.PodIPs = []corev1.PodIP{{IP: p.Status.PodIP}}
		p.Status.HostIP = "10.0.0.1"
	}
	ready := o.Phase == corev1.PodRunning && o.Ready && o.Restarts == 0
	p.Status.Conditions = []corev1.PodCondition{
		condition(corev1.PodInitialized, true, now),
		condition(corev1.ContainersReady, ready, now),
		condition(corev1.PodReady, ready, now),
	}
	p.Status.ContainerStatuses = nil
	for _, c := range p.Spec.Containers {
		st := corev1.ContainerStatus{Name: c.Name, Image: c.Image, ImageID: c.Image, Ready: ready, Started: ptr(o.Phase == corev1.PodRunning)}
		terminated := &corev1.ContainerStateTerminated{ExitCode: o.ExitCode, Reason: o.Reason, StartedAt: now, FinishedAt: now}
		switch {
		case o.Phase == corev1.PodRunning && o.Restarts > 0:
			st.RestartCount = o.Restarts
			st.State.Waiting = &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off restarting failed container"}
			st.LastTerminationState.Terminated = terminated
		case o.Phase == corev1.PodRunning:
			st.State.Running = &corev1.ContainerStateRunning{StartedAt: now}
		case o.Phase == corev1.PodSucceeded || o.Phase == corev1.PodFailed:
			st.State.Terminated = terminated
		default:
			st.State.Waiting = &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}
		}
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, st)
	}
	return k.client.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{})
}

// Serve watches the pods of namespace until ctx ends and writes, once for
// each new pod, the status decide returns for it (a zero Outcome leaves the
// pod alone). Errors other than a vanished pod go to report.
func (k *FakeKubeletForTest) Serve(ctx context.Context, namespace string, decide func(*corev1.Pod) Outcome, report func(error)) {
	var mu sync.Mutex
	seen := map[string]bool{}
	go func() {
		for ctx.Err() == nil {
			pods, err := k.client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
			if err == nil {
				for i := range pods.Items {
					pod := &pods.Items[i]
					mu.Lock()
					done := seen[string(pod.UID)]
					seen[string(pod.UID)] = true
					mu.Unlock()
					if pod.DeletionTimestamp != nil {
						k.finishDeletion(ctx, pod, report)
						continue
					}
					if done {
						continue
					}
					if o := decide(pod); o.Phase != "" {
						_, err := k.Set(ctx, pod, o)
						switch {
						case err == nil || ctx.Err() != nil || apierrors.IsNotFound(err):
						case apierrors.IsConflict(err): // changed since the list: decide again next round
							mu.Lock()
							delete(seen, string(pod.UID))
							mu.Unlock()
						default:
							report(fmt.Errorf("fake kubelet: set status of %s: %w", pod.Name, err))
						}
					}
				}
			} else if ctx.Err() == nil {
				report(fmt.Errorf("fake kubelet: list pods: %w", err))
			}
			select {
			case <-ctx.Done():
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
}

// bind assigns the pod to the fake kubelet's Node, creating the Node first.
func (k *FakeKubeletForTest) bind(ctx context.Context, pod *corev1.Pod) error {
	k.nodeOnce.Do(func() {
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: FakeNodeName, Labels: map[string]string{"kubernetes.io/hostname": FakeNodeName, FakeNodeLabel: "true"}},
			Spec:       corev1.NodeSpec{Taints: []corev1.Taint{{Key: FakeNodeLabel, Value: "true", Effect: corev1.TaintEffectNoSchedule}}},
		}
		_, k.nodeErr = k.client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(k.nodeErr) {
			k.nodeErr = nil
		}
	})
	if k.nodeErr != nil {
		return k.nodeErr
	}
	b := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace}, Target: corev1.ObjectReference{Kind: "Node", Name: FakeNodeName}}
	return k.client.CoreV1().Pods(pod.Namespace).Bind(ctx, b, metav1.CreateOptions{})
}

// finishDeletion removes a pod that is being deleted gracefully, as a
// kubelet does once its containers stopped: pods bound to a node wait for that.
func (k *FakeKubeletForTest) finishDeletion(ctx context.Context, pod *corev1.Pod, report func(error)) {
	if pod.Spec.NodeName != FakeNodeName {
		return
	}
	err := k.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr(int64(0)), Preconditions: metav1.NewUIDPreconditions(string(pod.UID))})
	if err != nil && ctx.Err() == nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		report(fmt.Errorf("fake kubelet: delete %s: %w", pod.Name, err))
	}
}

func condition(t corev1.PodConditionType, ok bool, now metav1.Time) corev1.PodCondition {
	s := corev1.ConditionFalse
	if ok {
		s = corev1.ConditionTrue
	}
	return corev1.PodCondition{Type: t, Status: s, LastTransitionTime: now}
}

func ptr[T any](v T) *T { return &v }
