package k8sdriver

import (
	"context"
	"testing"
	"time"

	"github.com/slessio/sless/k8sdriver/testcluster"
	"github.com/slessio/sless/store/codestore"
	"github.com/slessio/sless/store/codestore/s3embed"
	"github.com/slessio/sless/workers/drivertest"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// conformanceRegistry is the registry of the conformance run's driver: the
// fake node handles the pods of its images only, and leaves the other
// tests' pods to their own kubelet stand-ins.
const conformanceRegistry = "registry.conformance.test/sless"

// TestConformance runs the driver suite against the driver on the real
// kube-apiserver and controller manager, with a real S3 server for the
// code. The cluster has no node: fakeNodeForTest writes pod status and
// serves pod logs as a kubelet running the suite's samples would, and
// answers requests to a Service for a ready pod behind it.
func TestConformance(t *testing.T) {
	t.Parallel()
	c := testcluster.Get(t)
	ensureBuildNamespace(t, c)
	code := newConformanceCodeStore(t)
	logs := &fakeKubeletLogs{}
	cfg := Config{
		Registry: conformanceRegistry,
		S3:       S3Config{Bucket: conformanceBucket, Endpoint: "http://s3.conformance.test:9000"},
		Poll:     50 * time.Millisecond,
		Logs:     logs,
		// The Node.js busy loop blocks the wrapper's own timer: only the
		// Job's deadline (timeout_sec + this grace) ends it.
		JobStartGrace: 2 * time.Second,
	}
	d, err := New(c.Client, cfg)
	if err != nil {
		t.Fatal(err)
	}
	// The cases run after this function returns: everything they use stops
	// in Cleanup, not in a defer.
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	node := &fakeNodeForTest{ctx: ctx, client: c.Client, kubelet: testcluster.NewKubelet(c.Client), logs: logs,
		code: code, bucket: conformanceBucket, registry: conformanceRegistry, report: func(err error) {
			if ctx.Err() == nil { // the cases are over once ctx ends
				t.Errorf("%v", err)
			}
		},
		images: map[string]drivertest.FakeImageForTest{}, decided: map[types.UID]testcluster.Outcome{}}
	node.kubelet.Serve(ctx, metav1.NamespaceAll, node.decide, node.report)
	failures := &drivertest.FailureRecorder{}
	go d.WatchCrashLoops(ctx, 100*time.Millisecond, failures.Record)

	drivertest.Run(t, drivertest.Harness{
		Driver:        d,
		Code:          code,
		WaitCrashLoop: failures.Wait,
		Leftovers:     d.Leftovers,
		Get:           node.get,
		Skip: map[string]string{
			"CrashRestart": "restarting a crashed container is the kubelet's work, not the driver's, and this cluster has " +
				"no kubelet and runs no process to crash; the driver's side of restarts is CrashLoop",
			"SwitchVersions/under-load": "needs real processes answering real requests while the rolling update replaces " +
				"them; this cluster runs no containers (no kubelet, no kube-proxy); the rolling update itself is SwitchVersions/rolling",
		},
		BuildTimeout:     testTimeout,
		DeployTimeout:    testTimeout,
		CrashLoopTimeout: testTimeout,
		// Long enough for Deploy to see the pod available through two
		// controllers on a busy machine before it crashes.
		CrashAfter: 3 * time.Second,
	})
}

// conformanceBucket is the code bucket, named in the kaniko --context.
const conformanceBucket = "sless-code"

// newConformanceCodeStore starts an embedded S3 server with a code store on it.
func newConformanceCodeStore(t *testing.T) *codestore.Store {
	t.Helper()
	srv, err := s3embed.Start(context.Background(), s3embed.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	st, err := codestore.New(context.Background(), codestore.Config{Endpoint: srv.URL(), AccessKey: "test", SecretKey: "testsecret", Bucket: conformanceBucket})
	if err != nil {
		t.Fatal(err)
	}
	return st
}
