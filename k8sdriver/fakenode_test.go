package k8sdriver

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/k8sdriver/resources"
	"github.com/slessio/sless/k8sdriver/testcluster"
	"github.com/slessio/sless/workers"
	"github.com/slessio/sless/workers/drivertest"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// fakeNodeForTest stands in for what the test cluster lacks to run the
// conformance suite's samples: a node (kubelet and container runtime), an
// image registry and kube-proxy. Nothing runs: for every pod of its
// registry's images it predicts with drivertest.FakeImageForTest what the
// container would do, from what the driver made (the kaniko pod's
// arguments and the build context they point at, the image, the
// container's environment and Secrets, the readiness probe), and writes
// the pod status a kubelet would write (through testcluster.Kubelet) and
// the logs a kubelet would serve (through fakeKubeletLogs). Requests to a
// Service are answered for a ready pod behind it, as kube-proxy would route them.
type fakeNodeForTest struct {
	ctx      context.Context
	client   kubernetes.Interface
	kubelet  *testcluster.Kubelet
	logs     *fakeKubeletLogs
	code     workers.CodeFetcher // the S3 bucket kaniko would read
	bucket   string
	registry string // only images below it are this node's; other tests' pods are left alone
	report   func(error)

	mu      sync.Mutex
	images  map[string]drivertest.FakeImageForTest // pushed by the fake kaniko, by reference
	decided map[types.UID]testcluster.Outcome      // first status of each pod, with its follow-ups started
}

// fakeRestartDelay stands in for the kubelet's crash-loop back-off (10 s,
// doubling): short, so that a crash loop is reported within seconds.
const fakeRestartDelay = 100 * time.Millisecond

// fakeMaxRestarts is where the stand-in stops counting restarts.
const fakeMaxRestarts = 5

// decide is the testcluster.Kubelet decision for a new pod.
func (n *fakeNodeForTest) decide(pod *corev1.Pod) testcluster.Outcome {
	if len(pod.Spec.Containers) != 1 {
		return testcluster.Outcome{}
	}
	c := pod.Spec.Containers[0]
	isBuild := pod.Labels[resources.LabelComponent] == "build" && strings.HasPrefix(argValue(c.Args, "--destination"), n.registry+"/")
	if !isBuild && !strings.HasPrefix(c.Image, n.registry+"/") {
		return testcluster.Outcome{} // another test's pod
	}
	n.mu.Lock()
	o, done := n.decided[pod.UID]
	n.mu.Unlock()
	if done { // the first status write lost a race: write the same again
		return o
	}
	if isBuild {
		o = n.build(pod, c)
	} else {
		o = n.start(pod, c)
	}
	n.mu.Lock()
	n.decided[pod.UID] = o
	n.mu.Unlock()
	return o
}

// build is the kaniko container: it reads the build context the driver
// names from the bucket, "builds" it and pushes the image to the fake registry.
func (n *fakeNodeForTest) build(pod *corev1.Pod, c corev1.Container) testcluster.Outcome {
	failed := func(log string) testcluster.Outcome {
		n.logs.set(pod.Name, Logs{Stderr: log})
		return testcluster.Outcome{Phase: corev1.PodFailed, ExitCode: 1, Reason: "Error"}
	}
	key, ok := strings.CutPrefix(argValue(c.Args, "--context"), "s3://"+n.bucket+"/")
	if !ok {
		return failed("kaniko: --context must be s3://" + n.bucket + "/<key>, got " + argValue(c.Args, "--context") + "\n")
	}
	files, err := n.readContext(key)
	if err != nil {
		return failed("kaniko: error resolving build context: " + err.Error() + "\n")
	}
	from, _, _ := strings.Cut(files["Dockerfile"], "\n")
	base, ok := strings.CutPrefix(from, "FROM sless/")
	if !ok {
		return failed("kaniko: the Dockerfile starts with " + from + ", not a runtime's base image\n")
	}
	im := drivertest.FakeImageForTest{Runtime: domain.Runtime(base), Files: files, BuildArgs: map[string]string{}}
	for _, a := range c.Args {
		if kv, ok := strings.CutPrefix(a, "--build-arg="); ok {
			k, v, _ := strings.Cut(kv, "=")
			im.BuildArgs[k] = v
		}
	}
	p, err := im.Build()
	if err != nil {
		return failed("kaniko: " + err.Error() + "\n")
	}
	n.logs.set(pod.Name, Logs{Stdout: p.Stdout, Stderr: p.Stderr})
	if p.ExitCode != 0 {
		return testcluster.Outcome{Phase: corev1.PodFailed, ExitCode: int32(p.ExitCode), Reason: "Error"}
	}
	n.mu.Lock()
	n.images[argValue(c.Args, "--destination")] = im
	n.mu.Unlock()
	return testcluster.Outcome{Phase: corev1.PodSucceeded, Reason: "Completed"}
}

// readContext fetches and unpacks a build context.
func (n *fakeNodeForTest) readContext(key string) (map[string]string, error) {
	ctx, cancel := context.WithTimeout(n.ctx, 30*time.Second)
	defer cancel()
	rc, err := n.code.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	gz, err := gzip.NewReader(rc)
	if err != nil {
		return nil, err
	}
	files := map[string]string{}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files, nil
		}
		if err != nil {
			return nil, err
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			return nil, err
		}
		files[h.Name] = string(data)
	}
}

// start is the kubelet starting a function container: pulled from the fake
// registry, with its environment resolved as a kubelet does, it serves or
// runs once as its SLESS_MODE says. A pod whose image was never pushed or
// whose Secret is missing stays Pending, as ErrImagePull and
// CreateContainerConfigError would keep it.
func (n *fakeNodeForTest) start(pod *corev1.Pod, c corev1.Container) testcluster.Outcome {
	n.mu.Lock()
	im, pushed := n.images[c.Image]
	n.mu.Unlock()
	if !pushed {
		n.report(fmt.Errorf("fake node: pod %s/%s: image %s was never pushed", pod.Namespace, pod.Name, c.Image))
		return testcluster.Outcome{}
	}
	env, err := n.containerEnv(pod, c)
	if err != nil {
		n.report(fmt.Errorf("fake node: pod %s/%s: %w", pod.Namespace, pod.Name, err))
		return testcluster.Outcome{}
	}
	if env["SLESS_MODE"] == "job" {
		return n.runOnce(pod, im, env)
	}
	return n.serve(pod, c, im, env)
}

// runOnce is a job-mode container: restartPolicy Never, so the pod ends
// with the container.
func (n *fakeNodeForTest) runOnce(pod *corev1.Pod, im drivertest.FakeImageForTest, env map[string]string) testcluster.Outcome {
	p, err := im.Job(env, fakePID(pod.UID))
	if err != nil {
		n.report(fmt.Errorf("fake node: pod %s/%s: %w", pod.Namespace, pod.Name, err))
		return testcluster.Outcome{}
	}
	n.logs.set(pod.Name, Logs{Stdout: p.Stdout, Stderr: p.Stderr})
	end := testcluster.Outcome{Phase: corev1.PodSucceeded, Reason: "Completed"}
	if p.ExitCode != 0 {
		end = testcluster.Outcome{Phase: corev1.PodFailed, ExitCode: int32(p.ExitCode), Reason: "Error"}
	}
	switch {
	case p.Exits && p.After == 0:
		return end
	case p.Exits:
		go n.later(pod, p.After, end)
	}
	return testcluster.Outcome{Phase: corev1.PodRunning, Ready: true}
}

// serve is a server-mode container: restartPolicy Always, so a container
// that exits is restarted, after a back-off, again and again.
func (n *fakeNodeForTest) serve(pod *corev1.Pod, c corev1.Container, im drivertest.FakeImageForTest, env map[string]string) testcluster.Outcome {
	p, err := im.Server(env)
	if err != nil {
		n.report(fmt.Errorf("fake node: pod %s/%s: %w", pod.Namespace, pod.Name, err))
		return testcluster.Outcome{}
	}
	// The kubelet probes what the pod spec says; the wrapper answers on
	// its health path and PORT only.
	probe := c.ReadinessProbe
	ready := p.Ready && probe != nil && probe.HTTPGet != nil && probe.HTTPGet.Path == resources.HealthPath && probe.HTTPGet.Port.String() == p.Port
	// Logs with Previous: the last terminated container's output, which
	// is what each restart of this sample prints again.
	n.logs.set(pod.Name, Logs{Stdout: p.Stdout, Stderr: p.Stderr})
	if !p.Exits {
		return testcluster.Outcome{Phase: corev1.PodRunning, Ready: ready}
	}
	crashed := func(restarts int32) testcluster.Outcome {
		return testcluster.Outcome{Phase: corev1.PodRunning, Restarts: restarts, ExitCode: int32(p.ExitCode), Reason: "Error"}
	}
	go func() {
		if ready && !n.later(pod, p.After, crashed(1)) {
			return
		}
		for r := int32(2); r <= fakeMaxRestarts; r++ {
			if !n.later(pod, p.After+fakeRestartDelay, crashed(r)) {
				return
			}
		}
	}()
	if ready {
		return testcluster.Outcome{Phase: corev1.PodRunning, Ready: true}
	}
	return crashed(1) // exited before it got ready
}

// later writes o as pod's status after d, unless the pod is gone or going
// by then; it reports whether it wrote it.
func (n *fakeNodeForTest) later(pod *corev1.Pod, d time.Duration, o testcluster.Outcome) bool {
	select {
	case <-n.ctx.Done():
		return false
	case <-time.After(d):
	}
	for n.ctx.Err() == nil {
		cur, err := n.client.CoreV1().Pods(pod.Namespace).Get(n.ctx, pod.Name, metav1.GetOptions{})
		if err != nil || cur.UID != pod.UID || cur.DeletionTimestamp != nil {
			if err != nil && !apierrors.IsNotFound(err) && n.ctx.Err() == nil {
				n.report(fmt.Errorf("fake node: get pod %s: %w", pod.Name, err))
			}
			return false
		}
		_, err = n.kubelet.Set(n.ctx, cur, o)
		switch {
		case err == nil:
			return true
		case apierrors.IsConflict(err):
			continue
		case !apierrors.IsNotFound(err) && n.ctx.Err() == nil:
			n.report(fmt.Errorf("fake node: set status of %s: %w", pod.Name, err))
		}
		return false
	}
	return false
}

// containerEnv resolves a container's environment as the kubelet does:
// envFrom Secrets first, then env entries over them, a literal or a
// Secret's key (secretKeyRef; a missing Secret or key that is not optional
// is a CreateContainerConfigError). The function pods use no other source.
func (n *fakeNodeForTest) containerEnv(pod *corev1.Pod, c corev1.Container) (map[string]string, error) {
	ctx, cancel := context.WithTimeout(n.ctx, 30*time.Second)
	defer cancel()
	env := map[string]string{}
	for _, from := range c.EnvFrom {
		if from.SecretRef == nil {
			return nil, fmt.Errorf("envFrom other than a Secret: %+v", from)
		}
		s, err := n.client.CoreV1().Secrets(pod.Namespace).Get(ctx, from.SecretRef.Name, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("CreateContainerConfigError: secret %s: %w", from.SecretRef.Name, err)
		}
		for k, v := range s.Data {
			env[from.Prefix+k] = string(v)
		}
	}
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			env[e.Name] = e.Value
			continue
		}
		ref := e.ValueFrom.SecretKeyRef
		if ref == nil {
			return nil, fmt.Errorf("env %s from a reference other than a Secret's key: %+v", e.Name, e.ValueFrom)
		}
		optional := ref.Optional != nil && *ref.Optional
		s, err := n.client.CoreV1().Secrets(pod.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err) && optional:
			continue
		case err != nil:
			return nil, fmt.Errorf("CreateContainerConfigError: secret %s: %w", ref.Name, err)
		}
		v, ok := s.Data[ref.Key]
		switch {
		case !ok && optional:
			continue
		case !ok:
			return nil, fmt.Errorf("CreateContainerConfigError: couldn't find key %s in Secret %s/%s", ref.Key, pod.Namespace, ref.Name)
		}
		env[e.Name] = string(v)
	}
	return env, nil
}

// get is the suite's Harness.Get: a request to a Service endpoint
// (http://<service>.<ns>.svc.<domain>:<port>) goes, as kube-proxy sends it,
// to a ready pod in the Service's EndpointSlices that still exists, and
// is answered as the pod's container would answer it.
func (n *fakeNodeForTest) get(ctx context.Context, endpoint, path string) ([]byte, error) {
	u, err := url.Parse(endpoint)
	if err != nil {
		return nil, err
	}
	parts := strings.Split(u.Hostname(), ".")
	if len(parts) < 4 || parts[2] != "svc" || u.Port() != fmt.Sprint(resources.Port) {
		return nil, fmt.Errorf("GET %s%s: not a Service endpoint on port %d", endpoint, path, resources.Port)
	}
	// One look, as one connection: Deploy returns once the rollout is
	// done, and the EndpointSlice controller lists a ready pod before the
	// ReplicaSet and Deployment controllers report it available.
	pod, err := n.readyPod(ctx, parts[1], parts[0])
	if err != nil {
		return nil, err
	}
	if pod == nil {
		return nil, fmt.Errorf("GET %s%s: connection refused: no ready pod behind the service (%s)", endpoint, path, n.describeService(ctx, parts[1], parts[0]))
	}
	return n.answer(pod, path)
}

// readyPod picks at random one of the ready, running pods the Service's
// EndpointSlices list, or nil.
func (n *fakeNodeForTest) readyPod(ctx context.Context, ns, svc string) (*corev1.Pod, error) {
	sel := labels.Set{discoveryv1.LabelServiceName: svc}.String()
	list, err := n.client.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return nil, err
	}
	var pods []*corev1.Pod
	for _, s := range list.Items {
		for _, e := range s.Endpoints {
			if e.TargetRef == nil || e.TargetRef.Kind != "Pod" || e.Conditions.Ready == nil || !*e.Conditions.Ready {
				continue
			}
			pod, err := n.client.CoreV1().Pods(ns).Get(ctx, e.TargetRef.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				continue // the slice lags behind the pod's deletion; kube-proxy does too, but the connection fails
			}
			if err != nil {
				return nil, err
			}
			if pod.DeletionTimestamp == nil && pod.Status.Phase == corev1.PodRunning && podReady(pod) {
				pods = append(pods, pod)
			}
		}
	}
	if len(pods) == 0 {
		return nil, nil
	}
	return pods[rand.IntN(len(pods))], nil
}

// describeService says what the Service's EndpointSlices and pods are, for
// a failed request's message.
func (n *fakeNodeForTest) describeService(ctx context.Context, ns, svc string) string {
	var b strings.Builder
	sel := labels.Set{discoveryv1.LabelServiceName: svc}.String()
	if list, err := n.client.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{LabelSelector: sel}); err == nil {
		for _, s := range list.Items {
			for _, e := range s.Endpoints {
				name := ""
				if e.TargetRef != nil {
					name = e.TargetRef.Name
				}
				fmt.Fprintf(&b, "endpoint %s ready=%v; ", name, e.Conditions.Ready != nil && *e.Conditions.Ready)
			}
		}
	}
	if pods, err := n.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: labels.Set{resources.LabelFunction: svc}.String()}); err == nil {
		for _, p := range pods.Items {
			fmt.Fprintf(&b, "pod %s phase=%s ready=%v deleting=%v; ", p.Name, p.Status.Phase, podReady(&p), p.DeletionTimestamp != nil)
		}
	}
	return strings.TrimSuffix(b.String(), "; ")
}

func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// answer is the container of pod answering GET path.
func (n *fakeNodeForTest) answer(pod *corev1.Pod, path string) ([]byte, error) {
	c := pod.Spec.Containers[0]
	n.mu.Lock()
	im, ok := n.images[c.Image]
	n.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("GET %s: pod %s runs %s, which the fake registry never got", path, pod.Name, c.Image)
	}
	env, err := n.containerEnv(pod, c)
	if err != nil {
		return nil, err
	}
	return im.Answer(env, path, fakePID(pod.UID))
}

// fakePID is the process id a pod's container reports: the same for the
// pod's life, another for another pod.
func fakePID(uid types.UID) int {
	return int(crc32.ChecksumIEEE([]byte(uid))%(1<<22)) + 2
}

// argValue returns the value of a --name=value argument, or "".
func argValue(args []string, name string) string {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v
		}
	}
	return ""
}
