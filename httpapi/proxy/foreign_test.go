package proxy_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/driver"
	"github.com/slessio/sless/httpapi/proxy"
	"github.com/slessio/sless/internal/testutil"
)

// TestForeignEndpointStartsHere: with two control planes on one database,
// the route holds the endpoint of the plane that rolled the function out.
// Another plane's socket is not dialed: the function is started on this
// plane for the first request, like a cold start, and later rollouts
// elsewhere do not move its traffic — unless they bring a new version,
// which then runs here too.
func TestForeignEndpointStartsHere(t *testing.T) {
	t.Parallel()
	f := setup(t, options{owner: true})
	elsewhere, hits := f.otherPlane()
	f.build("away", pySpec, pyEcho)
	f.rolloutVersion("away", 1, elsewhere)
	st := f.waitRoute("away", func(st proxy.RouteState) bool { return st.Endpoint == elsewhere })
	if st.Awake || st.Live != "" {
		t.Fatalf("another plane's endpoint made the function awake here: %+v", st)
	}

	first := decodeEcho(t, f.get("away", "/"))
	st, _ = f.proxy.Lookup(f.ns, "away")
	if !st.Awake || !f.ownSocket(st.Live) {
		t.Fatalf("after the request: %+v, want awake at a socket of this plane's driver (%s)", st, f.dir)
	}
	if n := f.scaler.wakes.Load(); n != 1 {
		t.Fatalf("%d wakes, want 1", n)
	}
	if inv := f.waitInvocations("away", 1); len(inv) != 1 || !inv[0].ColdStart {
		t.Fatalf("the first request's record: %+v, want a cold start", inv)
	}

	// The other plane rolls the same version out again (it restarted: a
	// new socket): traffic stays on this plane's process (which this plane
	// follows the rollout to: the driver keeps it).
	again, _ := f.otherPlane()
	f.rolloutVersion("away", 1, again)
	f.waitRoute("away", func(st proxy.RouteState) bool { return st.Endpoint == again })
	for range 3 {
		if got := decodeEcho(t, f.get("away", "/")); got.Process != first.Process {
			t.Fatalf("served by %s after the other plane's rollout, want this plane's %s", got.Process, first.Process)
		}
	}
	if now, _ := f.proxy.Lookup(f.ns, "away"); now.Live != st.Live || !now.Awake {
		t.Fatalf("the other plane's rollout moved the live endpoint: %+v → %+v", st, now)
	}

	// A new version rolled out by the other plane runs here too, in place
	// of the old one.
	v2 := map[string]string{"handler.py": pyEcho["handler.py"] + "\nVERSION = 2\n"}
	f.buildVersion("away", 2, v2)
	f.rolloutVersion("away", 2, elsewhere)
	f.waitRoute("away", func(now proxy.RouteState) bool { return now.ActiveVersion == 2 && now.Awake && now.Live != st.Live })
	second := decodeEcho(t, f.get("away", "/"))
	if second.Process == first.Process {
		t.Fatal("version 2 is served by the process of version 1")
	}
	if now, _ := f.proxy.Lookup(f.ns, "away"); !f.ownSocket(now.Live) {
		t.Fatalf("version 2 is served at %s, not by this plane", now.Live)
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("the other plane's sockets got %d requests", n)
	}

	// This plane's own rollout is used as it is, without a wake.
	wakes := f.scaler.wakes.Load()
	f.deployHere("away", 2)
	if got := decodeEcho(t, f.get("away", "/")); got.Process == "" {
		t.Fatal("no answer")
	}
	if n := f.scaler.wakes.Load(); n != wakes {
		t.Fatalf("%d wakes after this plane's own rollout, want %d", n, wakes)
	}
}

// TestForeignRolloutAfterOwn: a function this plane rolled out gets a new
// version, rolled out by another plane: this plane runs it too (the
// activation came first, with this plane's endpoint of the old version).
func TestForeignRolloutAfterOwn(t *testing.T) {
	t.Parallel()
	f := setup(t, options{owner: true})
	elsewhere, hits := f.otherPlane()
	f.deploy("mine", pySpec, pyEcho)
	first := decodeEcho(t, f.get("mine", "/"))
	before, _ := f.proxy.Lookup(f.ns, "mine")
	f.buildVersion("mine", 2, map[string]string{"handler.py": pyEcho["handler.py"] + "\n# v2\n"})
	f.waitRoute("mine", func(st proxy.RouteState) bool { return st.ActiveVersion == 2 })
	f.rolloutVersion("mine", 2, elsewhere)
	st := f.waitRoute("mine", func(st proxy.RouteState) bool { return st.Endpoint == elsewhere && st.Awake && st.Live != before.Live })
	if !f.ownSocket(st.Live) {
		t.Fatalf("version 2 is served at %s, not by this plane", st.Live)
	}
	if got := decodeEcho(t, f.get("mine", "/")); got.Process == first.Process {
		t.Fatal("version 2 is served by the process of version 1")
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("the other plane's socket got %d requests", n)
	}
}

// TestForeignEndpointIdleSleepsHere: the instance a plane started for
// another plane's endpoint is its own: idle, it is stopped, and the next
// request starts it again here.
func TestForeignEndpointIdleSleepsHere(t *testing.T) {
	t.Parallel()
	f := setup(t, options{owner: true, idle: map[string]time.Duration{"doze": 300 * time.Millisecond}})
	elsewhere, hits := f.otherPlane()
	f.build("doze", pySpec, pyEcho)
	f.rolloutVersion("doze", 1, elsewhere)
	f.waitRoute("doze", func(st proxy.RouteState) bool { return st.Endpoint == elsewhere })
	first := decodeEcho(t, f.get("doze", "/"))
	f.waitRoute("doze", func(st proxy.RouteState) bool { return st.State == "asleep" })
	if n := f.scaler.sleeps.Load(); n != 1 {
		t.Fatalf("%d sleeps, want 1", n)
	}
	if got := decodeEcho(t, f.get("doze", "/")); got.Process == first.Process {
		t.Fatal("the idle process was not stopped")
	}
	if n, m := f.scaler.wakes.Load(), hits.Load(); n != 2 || m != 0 {
		t.Fatalf("%d wakes (want 2), %d requests to the other plane (want 0)", n, m)
	}

	// While a newer version builds, the other plane serves the active one:
	// so does this plane, starting it when asleep (no 503).
	if err := f.proxy.Sleep(context.Background(), f.ns, "doze"); err != nil {
		t.Fatal(err)
	}
	f.uploadVersion("doze", 2, map[string]string{"handler.py": pyEcho["handler.py"] + "\n# v2\n"})
	f.waitRoute("doze", func(st proxy.RouteState) bool { return st.Phase == domain.PhaseBuilding && st.State == "asleep" })
	decodeEcho(t, f.get("doze", "/"))
	if n := f.scaler.wakes.Load(); n != 3 {
		t.Fatalf("%d wakes, want 3", n)
	}
}

// TestStoppedElsewhereStopsHere: what this plane started for another
// plane's endpoint is this plane's to stop when a worker elsewhere stops the
// function (its endpoint goes away) or deletes it: that worker's driver
// cannot reach this plane's processes.
func TestStoppedElsewhereStopsHere(t *testing.T) {
	t.Parallel()
	f := setup(t, options{owner: true})
	elsewhere, _ := f.otherPlane()
	running := func(name string) string {
		t.Helper()
		f.build(name, pySpec, pyEcho)
		f.rolloutVersion(name, 1, elsewhere)
		f.waitRoute(name, func(st proxy.RouteState) bool { return st.Endpoint == elsewhere })
		decodeEcho(t, f.get(name, "/"))
		st, _ := f.proxy.Lookup(f.ns, name)
		if !st.Awake || !f.ownSocket(st.Live) {
			t.Fatalf("%s: %+v, want awake at a socket of this plane", name, st)
		}
		return strings.TrimPrefix(st.Live, "unix:")
	}
	gone := func(socket string) {
		t.Helper()
		testutil.Eventually(t, 20*time.Second, func() error {
			if _, err := os.Stat(socket); !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("this plane's socket %s is still there (%v)", socket, err)
			}
			return nil
		})
	}

	// Stopped elsewhere: the other plane's rollout leaves no endpoint.
	socket := running("stopped")
	f.rolloutVersion("stopped", 1, "")
	gone(socket)
	if n := f.scaler.sleeps.Load(); n != 1 {
		t.Fatalf("%d sleeps, want 1", n)
	}

	// Deleted elsewhere.
	socket = running("deleted")
	f.fn("deleted", func(fn *domain.Function) ([]domain.Event, error) { return fn.Delete(time.Now()) })
	gone(socket)
}

// TestEndpointsAllOwnedWithoutOwner: a scaler that does not say which
// endpoints are its own (the Kubernetes driver's are every plane's) leaves
// routing as it was: the route's endpoint is used wherever it is.
func TestEndpointsAllOwnedWithoutOwner(t *testing.T) {
	t.Parallel()
	f := setup(t, options{})
	elsewhere, hits := f.otherPlane()
	f.build("there", pySpec, pyEcho)
	f.rolloutVersion("there", 1, elsewhere)
	f.waitRoute("there", func(st proxy.RouteState) bool { return st.Endpoint == elsewhere && st.Live == elsewhere && st.Awake })
	if a := f.get("there", "/"); a.status != 200 || string(a.body) != "elsewhere" {
		t.Fatalf("%d %s, want the other endpoint's answer", a.status, a.body)
	}
	if n, m := f.scaler.wakes.Load(), hits.Load(); n != 0 || m != 1 {
		t.Fatalf("%d wakes (want 0), %d requests to the endpoint (want 1)", n, m)
	}
}

// otherPlane serves a Unix socket outside this plane's driver, as another
// control plane's function would, and counts the requests it gets.
func (f *fixture) otherPlane() (endpoint string, hits *atomic.Int64) {
	f.t.Helper()
	dir, err := os.MkdirTemp("", "sless-other-") // short: a socket path has at most 107 bytes
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { _ = os.RemoveAll(dir) })
	path := filepath.Join(dir, "f.sock")
	l, err := net.Listen("unix", path)
	if err != nil {
		f.t.Fatal(err)
	}
	hits = new(atomic.Int64)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		_, _ = w.Write([]byte("elsewhere"))
	})}
	go func() { _ = srv.Serve(l) }()
	f.t.Cleanup(func() { _ = srv.Close() })
	return "unix:" + path, hits
}

// ownSocket reports whether endpoint is a socket of the fixture's driver.
func (f *fixture) ownSocket(endpoint string) bool {
	return strings.HasPrefix(endpoint, "unix:"+f.dir+string(filepath.Separator))
}

// rolloutVersion records that version n runs at endpoint, as the plane
// that ran the rollout does.
func (f *fixture) rolloutVersion(name string, n int, endpoint string) {
	f.t.Helper()
	f.fn(name, func(fn *domain.Function) ([]domain.Event, error) { return fn.CompleteRollout(n, endpoint, time.Now()) })
}

// buildVersion uploads files as the next version n of a function and builds
// it with the fixture's driver; it becomes active.
func (f *fixture) buildVersion(name string, n int, files map[string]string) {
	f.t.Helper()
	code, cfg := f.uploadVersion(name, n, files)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, err := f.driver.Build(ctx, driver.BuildSpec{Namespace: f.ns, Function: name, Version: n, Digest: code.Digest,
		ZipKey: code.ZipKey, Config: cfg, Code: f.code})
	if err != nil || res.Failed {
		f.t.Fatalf("build %s v%d: %v %s\n%s", name, n, err, res.Message, res.Log)
	}
	f.fn(name, func(fn *domain.Function) ([]domain.Event, error) {
		return fn.SucceedBuild(n, res.Image, res.Log, time.Now())
	})
}

// uploadVersion uploads files as the next version n of a function, not
// built yet (the function is Building).
func (f *fixture) uploadVersion(name string, n int, files map[string]string) (domain.Code, domain.FunctionConfig) {
	f.t.Helper()
	code := f.storeCode(name, files)
	var cfg domain.FunctionConfig
	f.fn(name, func(fn *domain.Function) ([]domain.Event, error) {
		evs, got, err := fn.Upload(code, time.Now())
		if err == nil && got != n {
			err = domain.Errorf(domain.EINTERNAL, "upload made version %d, want %d", got, n)
		}
		cfg = fn.Config
		return evs, err
	})
	return code, cfg
}

// deployHere runs the active version n with the fixture's driver and
// records the rollout, as this plane's workers would, and waits until the
// proxy routes it there.
func (f *fixture) deployHere(name string, n int) {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	v, err := f.store.GetVersion(ctx, f.ns, name, n)
	if err != nil {
		f.t.Fatal(err)
	}
	endpoint, err := f.driver.Deploy(ctx, driver.Deployment{Replicas: 1,
		Workload: driver.Workload{Namespace: f.ns, Function: name, Version: n, Image: v.Image, Config: v.Config}})
	if err != nil {
		f.t.Fatal(err)
	}
	f.rolloutVersion(name, n, endpoint)
	f.waitRoute(name, func(st proxy.RouteState) bool { return st.Endpoint == endpoint && st.Live == endpoint && st.Awake })
}
