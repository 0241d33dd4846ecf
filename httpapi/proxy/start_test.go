package proxy_test

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/driver"
	"github.com/slessio/sless/httpapi/proxy"
)

// TestStartingFunctionIsWaitedFor: requests to a function whose rollout has
// not run it yet (just built, or its http trigger just enabled) wait for it
// like for a cold start and are served — no 503 in between — with one start.
func TestStartingFunctionIsWaitedFor(t *testing.T) {
	t.Parallel()
	eachServer(t, testStartingFunctionIsWaitedFor)
}

func testStartingFunctionIsWaitedFor(t *testing.T, fast bool) {
	t.Parallel()
	f := setup(t, options{fast: fast})
	w := f.build("fresh", pySpec, pyEcho)
	f.waitRoute("fresh", func(st proxy.RouteState) bool {
		return st.Phase == domain.PhaseReady && st.ActiveVersion == 1 && st.HTTPEnabled && st.Endpoint == ""
	})

	var wg sync.WaitGroup
	for range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if a := f.get("fresh", "/"); a.status != 200 {
				t.Errorf("a request while the function was starting: %d %s", a.status, a.body)
			}
		}()
	}
	wg.Wait()
	if n := f.scaler.wakes.Load(); t.Failed() || n != 1 {
		t.Fatalf("%d starts, want one", n)
	}
	if invs := f.waitInvocations("fresh", 10); len(invs) != 10 || !invs[len(invs)-1].ColdStart {
		t.Fatalf("recorded %+v, want 10, the first cold", invs)
	}

	// The rollout ends where the proxy's start ran it; then the trigger is
	// disabled (the rollout stops the function) and enabled again.
	first, _ := f.proxy.Lookup(f.ns, "fresh")
	f.rollout("fresh", first.Live)
	f.trigger("fresh-http", func(tr *domain.Trigger) ([]domain.Event, error) { return tr.SetEnabled(false, time.Now()) })
	if _, err := f.driver.Deploy(context.Background(), driver.Deployment{Workload: w, Replicas: 0}); err != nil {
		t.Fatal(err)
	}
	f.fn("fresh", func(fn *domain.Function) ([]domain.Event, error) { return fn.CompleteRollout(1, "", time.Now()) })
	f.waitRoute("fresh", func(st proxy.RouteState) bool { return !st.HTTPEnabled && st.Endpoint == "" })
	wantError(t, f.get("fresh", "/"), 503, domain.EUNAVAILABLE, "disabled")
	f.trigger("fresh-http", func(tr *domain.Trigger) ([]domain.Event, error) { return tr.SetEnabled(true, time.Now()) })
	f.waitRoute("fresh", func(st proxy.RouteState) bool { return st.HTTPEnabled })
	decodeEcho(t, f.get("fresh", "/"))
	if n := f.scaler.wakes.Load(); n != 2 {
		t.Fatalf("%d starts, want 2", n)
	}
	if st, _ := f.proxy.Lookup(f.ns, "fresh"); st.Live == first.Live {
		t.Fatalf("served at the stopped endpoint %s", st.Live)
	}
}

// TestStartWaitIsBoundedByTimeout: a request waits for a start at most the
// function's timeout_sec (here 1 s, WakeTimeout 20 s), then gets 503 with
// Retry-After; the start goes on, and serves the next request.
func TestStartWaitIsBoundedByTimeout(t *testing.T) {
	t.Parallel()
	eachServer(t, testStartWaitIsBoundedByTimeout)
}

func testStartWaitIsBoundedByTimeout(t *testing.T, fast bool) {
	t.Parallel()
	f := setup(t, options{fast: fast})
	spec := pySpec
	spec.TimeoutSec = 1
	f.build("slow-start", spec, pyEcho)
	f.waitRoute("slow-start", func(st proxy.RouteState) bool { return st.Phase == domain.PhaseReady && st.HTTPEnabled })
	hold := make(chan struct{})
	f.scaler.hold.Store(&hold)

	start := time.Now()
	a := f.get("slow-start", "/")
	wantError(t, a, 503, domain.EUNAVAILABLE, "did not start in time")
	if a.header.Get("Retry-After") == "" {
		t.Fatal("503 without Retry-After")
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("waited %v for the start, beyond the function's timeout", took)
	}
	close(hold)
	// The start goes on: a later request is served by it. On a loaded
	// machine the process may take longer than the 1 s a request waits, so
	// requests are repeated until it is up (the start is not repeated).
	deadline := time.Now().Add(30 * time.Second)
	a = f.get("slow-start", "/")
	for a.status == 503 && time.Now().Before(deadline) {
		a = f.get("slow-start", "/")
	}
	decodeEcho(t, a)
	if n := f.scaler.wakes.Load(); n != 1 {
		t.Fatalf("%d starts, want 1", n)
	}
}

// TestStartWaitQueueIsBounded: while a function starts, at most MaxWaiting
// requests are held; the next one gets 503 with Retry-After at once, and
// the held ones are served when the start ends.
func TestStartWaitQueueIsBounded(t *testing.T) {
	t.Parallel()
	eachServer(t, testStartWaitQueueIsBounded)
}

func testStartWaitQueueIsBounded(t *testing.T, fast bool) {
	t.Parallel()
	f := setup(t, options{fast: fast, cfg: func(c *proxy.Config) { c.MaxWaiting = 3 }})
	f.build("queue", pySpec, pyEcho)
	f.waitRoute("queue", func(st proxy.RouteState) bool { return st.Phase == domain.PhaseReady && st.HTTPEnabled })
	hold := make(chan struct{})
	f.scaler.hold.Store(&hold)

	held := make(chan answer, 3)
	for range 3 {
		go func() { held <- f.get("queue", "/") }()
	}
	f.waitRoute("queue", func(st proxy.RouteState) bool { return st.Waiting == 3 })
	start := time.Now()
	a := f.get("queue", "/")
	wantError(t, a, 503, domain.EUNAVAILABLE, "too many requests are waiting")
	if a.header.Get("Retry-After") == "" || time.Since(start) > 2*time.Second {
		t.Fatalf("the fourth request: Retry-After %q after %v; want a prompt 503 with it", a.header.Get("Retry-After"), time.Since(start))
	}
	close(hold)
	for range 3 {
		decodeEcho(t, <-held)
	}
	if n := f.scaler.wakes.Load(); n != 1 {
		t.Fatalf("%d starts, want 1", n)
	}
}

// pyCrashOnStart loads at build time; only its server (given a socket)
// fails, with a traceback naming a path of the host.
var pyCrashOnStart = map[string]string{"handler.py": `import os

if "SLESS_LISTEN_FD" in os.environ:
    raise RuntimeError("no config in " + os.getcwd())


def handle(event):
    return "never"
`}

// TestStartFailureStaysPrivate: a function whose start fails with a
// traceback naming paths of the host answers a stranger only that it failed
// to start (or, once its rollout failed, its phase); the traceback is in the
// owner's invocation record.
func TestStartFailureStaysPrivate(t *testing.T) {
	t.Parallel()
	eachServer(t, testStartFailureStaysPrivate)
}

func testStartFailureStaysPrivate(t *testing.T, fast bool) {
	t.Parallel()
	f := setup(t, options{fast: fast})
	f.build("crash", pySpec, pyCrashOnStart)
	f.waitRoute("crash", func(st proxy.RouteState) bool { return st.Phase == domain.PhaseReady && st.HTTPEnabled })

	a := f.get("crash", "/")
	wantError(t, a, 503, domain.EUNAVAILABLE, `function "crash" failed to start`)
	inv := f.invocationOf("crash", a)
	m := regexp.MustCompile(`File "(/[^"]+)"`).FindStringSubmatch(inv.Error)
	if !strings.Contains(inv.Error, "Traceback") || !strings.Contains(inv.Error, "no config in /") || m == nil {
		t.Fatalf("the owner's record lacks the traceback: %q", inv.Error)
	}
	private := []string{"Traceback", "RuntimeError", "no config", m[1]}
	for _, s := range private {
		if strings.Contains(string(a.body), s) {
			t.Fatalf("%q reached an anonymous caller: %s", s, a.body)
		}
	}

	// The rollout fails the same way: the function is Failed with the
	// traceback as its message.
	f.fn("crash", func(fn *domain.Function) ([]domain.Event, error) { return fn.FailRollout(1, inv.Error, time.Now()) })
	f.waitRoute("crash", func(st proxy.RouteState) bool { return st.Phase == domain.PhaseFailed })
	a = f.get("crash", "/")
	wantError(t, a, http.StatusServiceUnavailable, domain.EUNAVAILABLE, `function "crash" is not ready (phase Failed)`)
	for _, s := range private {
		if strings.Contains(string(a.body), s) {
			t.Fatalf("%q reached an anonymous caller: %s", s, a.body)
		}
	}
	if inv := f.invocationOf("crash", a); !strings.Contains(inv.Error, m[1]) {
		t.Fatalf("the owner's record lacks the rollout failure: %q", inv.Error)
	}
}
