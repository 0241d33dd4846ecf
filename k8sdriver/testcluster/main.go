package testcluster

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
)

// startTimeout bounds starting the cluster (the API server is ready in ~15 s
// on an idle machine; builds running next to it slow it down).
const startTimeout = 3 * time.Minute

var (
	mainRunning atomic.Bool
	once        sync.Once
	shared      *Cluster
	sharedErr   error
	skipReason  string
	sharedDir   string
)

// Main runs a test package whose tests call Get: the cluster starts with the
// first Get and stops when the tests are done.
func Main(m *testing.M) { os.Exit(Wrap(m).Run()) }

// Wrap returns m for another package's Main (pgtest.Main(testcluster.Wrap(m)))
// whose Run also stops the cluster after the tests.
func Wrap(m *testing.M) interface{ Run() int } { return wrapped{m} }

type wrapped struct{ m *testing.M }

func (w wrapped) Run() int {
	mainRunning.Store(true)
	code := w.m.Run()
	if shared != nil {
		if err := shared.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "testcluster: stop: %v\n", err)
			code = 1
		}
	}
	if sharedDir != "" {
		os.RemoveAll(sharedDir)
	}
	return code
}

// InCI reports whether the tests run in CI (CI=true), where a missing
// binary fails the tests instead of skipping them.
func InCI() bool { return os.Getenv("CI") == "true" }

// Get returns the package's cluster, starting it on first use. Without the
// binaries it skips the test, or fails it in CI; a cluster that does not
// start fails it.
func Get(t testing.TB) *Cluster {
	t.Helper()
	if !mainRunning.Load() {
		t.Fatal("testcluster: call testcluster.Main(m) from TestMain, so the cluster stops after the tests")
	}
	once.Do(func() {
		bins, err := FindBinaries()
		if err != nil {
			skipReason = fmt.Sprintf("testcluster: no Kubernetes test cluster: %v", err)
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
		defer cancel()
		shared, sharedDir, sharedErr = startInNewDir(ctx, bins)
		if sharedErr == nil {
			fmt.Fprintf(os.Stderr, "testcluster: Kubernetes %s with its node ready in %s\n", Version, shared.Started.Round(time.Millisecond))
		}
	})
	if skipReason != "" {
		if InCI() {
			t.Fatal(skipReason + " (CI=true: the Taskfile's k8s:binaries and .ci/run must provide them)")
		}
		t.Skip(skipReason)
	}
	if sharedErr != nil {
		t.Fatalf("testcluster: start: %v", sharedErr)
	}
	return shared
}

// Kubeconfig writes a kubeconfig with the cluster's admin credentials into
// a folder of the test's and returns its path (for a program under test).
func (c *Cluster) Kubeconfig(t testing.TB) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := writeKubeconfig(path, c.Admin); err != nil {
		t.Fatal(err)
	}
	return path
}

// startInNewDir starts a cluster in a new folder below the temporary
// directory. It tries again, in another folder, when a port it chose was
// taken before its program bound it (two test packages start clusters at
// once, and kubelet and the pods take ports too).
func startInNewDir(ctx context.Context, bins Binaries) (*Cluster, string, error) {
	for attempt := 1; ; attempt++ {
		dir, err := os.MkdirTemp("", "sless-testcluster-")
		if err != nil {
			return nil, "", err
		}
		c, err := Start(ctx, bins, dir)
		if err == nil {
			return c, dir, nil
		}
		os.RemoveAll(dir)
		if attempt == 3 || !strings.Contains(err.Error(), "address already in use") {
			return nil, "", err
		}
	}
}

// Namespace creates a namespace of its own for the test and deletes it when
// the test ends.
func (c *Cluster) Namespace(t testing.TB, prefix string) string {
	t.Helper()
	return c.namespace(t, prefix, nil)
}

// FakeNamespace is Namespace for the pods of a FakeKubeletForTest: the
// scheduler never places them on the real node.
func (c *Cluster) FakeNamespace(t testing.TB, prefix string) string {
	t.Helper()
	return c.namespace(t, prefix, FakeNamespaceAnnotations)
}

// FakeNamespaceAnnotations make a namespace fake (see FakeNamespace), for a
// test that creates the namespace itself.
var FakeNamespaceAnnotations = map[string]string{"scheduler.alpha.kubernetes.io/node-selector": FakeNodeLabel + "=true"}

func (c *Cluster) namespace(t testing.TB, prefix string, annotations map[string]string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	name := strings.TrimSuffix(prefix, "-") + "-" + randomHex(5)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: annotations}}
	if _, err := c.Client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := c.Client.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Errorf("delete namespace %s: %v", name, err)
		}
	})
	return name
}

// BuildNamespace makes a build namespace as deploy/README.md tells an
// operator to: labelled Pod Security baseline (kaniko runs as root in its
// container), with the Secret sless-s3 (keys access-key and secret-key) and
// an empty registry login sless-registry. annotations are added to the
// namespace (FakeNamespaceAnnotations for a fake one).
func (c *Cluster) BuildNamespace(t testing.TB, ns string, annotations map[string]string, s3AccessKey, s3SecretKey string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	opts := metav1.ApplyOptions{FieldManager: "testcluster", Force: true}
	nsObj := corev1ac.Namespace(ns).WithLabels(map[string]string{"pod-security.kubernetes.io/enforce": "baseline"}).WithAnnotations(annotations)
	if _, err := c.Client.CoreV1().Namespaces().Apply(ctx, nsObj, opts); err != nil {
		t.Fatal(err)
	}
	for _, s := range []*corev1ac.SecretApplyConfiguration{
		corev1ac.Secret("sless-s3", ns).WithStringData(map[string]string{"access-key": s3AccessKey, "secret-key": s3SecretKey}),
		corev1ac.Secret("sless-registry", ns).WithType(corev1.SecretTypeDockerConfigJson).
			WithStringData(map[string]string{corev1.DockerConfigJsonKey: `{"auths":{}}`}),
	} {
		if _, err := c.Client.CoreV1().Secrets(ns).Apply(ctx, s, opts); err != nil {
			t.Fatal(err)
		}
	}
}

// Forward makes target (an address of this machine's loopback, e.g. the
// API server's or a database's) reachable from pods at the returned
// address on the node's bridge, for as long as the test runs: a TCP
// forwarder in the test process.
func (c *Cluster) Forward(t testing.TB, target string) string {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(c.Node.BridgeIP, "0"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				up, err := net.Dial("tcp", target)
				if err != nil {
					return
				}
				defer up.Close()
				done := make(chan struct{}, 2)
				go func() { _, _ = io.Copy(up, conn); done <- struct{}{} }()
				go func() { _, _ = io.Copy(conn, up); done <- struct{}{} }()
				<-done
			}()
		}
	}()
	return ln.Addr().String()
}

// APIServer returns the host:port of the API server on loopback.
func (c *Cluster) APIServer() string { return strings.TrimPrefix(c.Admin.Host, "https://") }
