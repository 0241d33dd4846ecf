package k8sdriver

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/driver"
	"github.com/slessio/sless/driver/drivertest"
	"github.com/slessio/sless/k8sdriver/testcluster"
	"github.com/slessio/sless/store/codestore"
	"github.com/slessio/sless/store/codestore/s3embed"
)

// TestConformance runs the driver suite, with no case skipped, against the
// driver on the test cluster's real node: kaniko Jobs build the samples'
// images from build contexts in a real S3 server and push them to the
// node's registry, pods run them, the suite calls them at their pod
// addresses (EndpointSlices), and job results are the pods' output read
// through the API server.
func TestConformance(t *testing.T) {
	t.Parallel()
	c := testcluster.Get(t)
	d, code := realNodeDriver(t, c, func(cfg *Config) {
		// The Node.js busy loop blocks the wrapper's own timer: only the
		// Job's deadline (timeout_sec + this grace) ends it.
		cfg.JobStartGrace = 5 * time.Second
		cfg.CrashWatchInterval = 250 * time.Millisecond
	})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	failures := &drivertest.FailureRecorder{}
	go d.Watch(ctx, driver.Reports{Crashed: failures.Record})

	drivertest.Run(t, drivertest.Harness{
		Driver:           d,
		Code:             code,
		BaseImage:        func(rt domain.Runtime) string { return testcluster.RuntimeImage(string(rt)) },
		WaitCrashLoop:    failures.Wait,
		Leftovers:        d.Leftovers,
		BuildTimeout:     10 * time.Minute,
		DeployTimeout:    3 * time.Minute,
		CrashLoopTimeout: 3 * time.Minute,
		// Long enough for Deploy to see the pod available before it crashes.
		CrashAfter: 5 * time.Second,
		Drain:      2 * time.Second,
	})
}

// codeBucket is the bucket of the build contexts, named in kaniko's --context.
const codeBucket = "sless-code"

// The S3 credentials of the tests on the real node: every S3 server they
// start takes them, so that the one sless-builds/sless-s3 Secret serves all.
const s3Access, s3Secret = "sless-test", "sless-test-secret"

// nodeS3 starts an S3 server with the code bucket on the node's bridge,
// where kaniko's pods reach it, and makes sless-builds as deploy/ does with
// its credentials.
func nodeS3(t testing.TB, c *testcluster.Cluster) *s3embed.Server {
	t.Helper()
	srv, err := s3embed.Start(context.Background(), s3embed.Options{Dir: t.TempDir(), Addr: net.JoinHostPort(c.Node.BridgeIP, "0"),
		AccessKey: s3Access, SecretKey: s3Secret, Buckets: []string{codeBucket}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	c.BuildNamespace(t, "sless-builds", nil, s3Access, s3Secret)
	return srv
}

// realNodeDriver returns a driver configured for the test cluster's node as
// deploy/ configures one for a real cluster, but for where images and code
// live: the node's registry (also standing in, through kaniko's registry
// map, for the registries the base images come from) and an embedded S3
// server on the node's bridge, where pods reach it. It uses the real
// log source and the real build namespace, made as deploy/ makes it with
// the S3 server's credentials.
func realNodeDriver(t testing.TB, c *testcluster.Cluster, change func(*Config)) (*Driver, *codestore.Store) {
	t.Helper()
	srv := nodeS3(t, c)
	code, err := codestore.New(context.Background(), codestore.Config{Endpoint: srv.URL(), AccessKey: s3Access, SecretKey: s3Secret, Bucket: codeBucket})
	if err != nil {
		t.Fatal(err)
	}
	reg := c.Node.Registry.Host
	cfg := Config{
		Registry:           reg + "/sless",
		S3:                 S3Config{Bucket: codeBucket, Endpoint: srv.URL()},
		Endpoint:           EndpointSlices,
		RegistryMirrors:    map[string]string{"index.docker.io": reg, "gcr.io": reg},
		InsecureRegistries: []string{reg},
		Poll:               100 * time.Millisecond,
	}
	if change != nil {
		change(&cfg)
	}
	d, err := New(c.Client, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if d.cfg.KanikoImage != testcluster.KanikoImage {
		t.Fatalf("the node has kaniko as %s, the driver runs %s", testcluster.KanikoImage, d.cfg.KanikoImage)
	}
	return d, code
}
