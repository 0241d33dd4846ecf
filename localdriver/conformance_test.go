package localdriver_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/slessio/sless/driver"
	"github.com/slessio/sless/driver/drivertest"
	"github.com/slessio/sless/localdriver"
	"github.com/slessio/sless/localdriver/sandbox/sandboxtest"
	"github.com/slessio/sless/store/codestore"
	"github.com/slessio/sless/store/codestore/s3embed"
)

// TestConformance runs the driver suite against the local driver with real
// python3, node and go, and a real S3 server for the code.
func TestConformance(t *testing.T) {
	runConformance(t, localdriver.Options{})
}

// TestConformanceWithWarmPool runs the suite with a warm pool: functions
// whose settings a pooled process can take (the samples' memory_mb is the
// default) are served by processes started before they were deployed, and
// must behave as processes started for them do. (Leftovers cannot find a
// pooled process by its function's build: its /app holds links to it.)
func TestConformanceWithWarmPool(t *testing.T) {
	runConformance(t, localdriver.Options{WarmPool: 2})
}

// runConformance runs the driver suite against a driver of opts.
func runConformance(t *testing.T, opts localdriver.Options) {
	d, dir, failures := newDriver(t, opts)
	drivertest.Run(t, drivertest.Harness{
		Driver:        d,
		Code:          newCodeStore(t),
		WaitCrashLoop: failures.Wait,
		Leftovers:     leftovers(dir),
		Drain:         testDrain,
	})
}

// testDrain is the drain time of the test drivers: short, so that cases
// finish fast, but long enough to show that switching versions drops nothing.
const testDrain = time.Second

// newDriver starts a driver in a temporary directory with short timings and
// closes it at the end of the test. Options given win over the test defaults.
func newDriver(t *testing.T, opts localdriver.Options) (*localdriver.Driver, string, *drivertest.FailureRecorder) {
	t.Helper()
	failures := &drivertest.FailureRecorder{}
	if opts.Dir == "" {
		opts.Dir = t.TempDir()
	}
	if opts.Logger == nil {
		opts.Logger = discard
	}
	if opts.Drain == 0 {
		opts.Drain = testDrain
	}
	if opts.StopGrace == 0 {
		opts.StopGrace = 2 * time.Second
	}
	if opts.RestartBackoff == 0 {
		opts.RestartBackoff = 50 * time.Millisecond
	}
	d, err := localdriver.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	watch, stopWatch := context.WithCancel(context.Background())
	go d.Watch(watch, driver.Reports{Crashed: failures.Record})
	t.Cleanup(func() {
		stopWatch()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := d.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
		if left := sandboxtest.Describe(opts.Dir); len(left) > 0 {
			t.Errorf("processes left after Close: %v", left)
		}
	})
	return d, opts.Dir, failures
}

// newCodeStore starts an embedded S3 server with a code store on it.
func newCodeStore(t testing.TB) *codestore.Store {
	t.Helper()
	srv, err := s3embed.Start(context.Background(), s3embed.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	st, err := codestore.New(context.Background(), codestore.Config{Endpoint: srv.URL(), AccessKey: "test", SecretKey: "testsecret", Bucket: "code"})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// leftovers reports the processes running from a function's build
// directory and the directory itself.
func leftovers(dir string) func(ctx context.Context, ns, fn string) ([]string, error) {
	return func(ctx context.Context, ns, fn string) ([]string, error) {
		fnDir := filepath.Join(dir, "builds", ns, fn)
		left := sandboxtest.Describe(fnDir)
		if _, err := os.Stat(fnDir); err == nil {
			left = append(left, "directory "+fnDir)
		}
		return left, nil
	}
}
